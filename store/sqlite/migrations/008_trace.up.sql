-- The W3C trace context an append carried (journal.Entry.Traceparent and
-- Tracestate), sent as a child with each delivery; '' for none.
ALTER TABLE herald_record ADD COLUMN traceparent TEXT NOT NULL DEFAULT '';
ALTER TABLE herald_record ADD COLUMN tracestate TEXT NOT NULL DEFAULT '';
