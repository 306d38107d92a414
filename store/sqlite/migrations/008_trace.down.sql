ALTER TABLE herald_record DROP COLUMN tracestate;
ALTER TABLE herald_record DROP COLUMN traceparent;
