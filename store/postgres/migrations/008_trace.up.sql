-- The W3C trace context an append carried (journal.Entry.Traceparent and
-- Tracestate), sent as a child with each delivery; '' for none. A constant
-- default: no table rewrite.
ALTER TABLE herald_record ADD COLUMN traceparent text NOT NULL DEFAULT '';
ALTER TABLE herald_record ADD COLUMN tracestate text NOT NULL DEFAULT '';
