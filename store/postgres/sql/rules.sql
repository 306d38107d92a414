-- The rules several statements apply, each written once here (the package
-- documentation, "Where the rules live"). A statement takes one in with a
-- Go template action, template "name" arg; internal/sqlfile runs them once,
-- when the store loads the files (sqlfiles.go).

-- cursor_moved: what every cursor write under a claim sets, the cursor
-- moved to the argument if that is forward: a moved cursor resets the attempts,
-- the host failures and the last error (store.ChargeHost counts a host
-- failure by the same rule, in Go). r is the registration's row.
{{define "cursor_moved"}}attempts = CASE WHEN {{.}} > r.next_seq THEN 0 ELSE r.attempts END,
    host_failures = CASE WHEN {{.}} > r.next_seq THEN 0 ELSE r.host_failures END,
    last_error = CASE WHEN {{.}} > r.next_seq THEN '' ELSE r.last_error END,
    next_seq = GREATEST(r.next_seq, {{.}}){{end}}

-- fenced_by: the WHERE clause of a write under a claim: the claim's owner
-- still holds the lease, and the cursor is at most the stream's head + 1.
{{define "fenced_by"}}WHERE r.stream = @stream AND r.id = @id AND r.lease_owner = @owner
  AND @next_seq::bigint <= (SELECT s.head + 1 FROM herald_stream s WHERE s.stream = @stream){{end}}

-- failed: the rest of the write of a turn that failed under a claim, its
-- own counts set before it: the cursor reached, the error, the lease
-- released, fenced. The evidence goes in only if the UPDATE applied.
{{define "failed"}},
        next_seq = GREATEST(r.next_seq, @next_seq::bigint), last_error = @error,
        lease_owner = '', lease_until = NULL
    {{template "fenced_by"}}
    RETURNING 1
)
{{template "insert_evidence"}} FROM upd{{end}}

-- insert_evidence: one evidence row (store.Evidence, cleaned: evidenceArgs).
{{define "insert_evidence"}}INSERT INTO herald_evidence
    (stream, registration, at, event, seq, record_id, message_id, attempt, status, body, location, duration_ns, error, not_before)
SELECT @stream::text, @id::text, @at::timestamptz, @event::text, @seq::bigint, @record_id::text, @message_id::text,
       @attempt::int, @status::int, @body::bytea, @location::text, @duration_ns::bigint, @error::text, @ev_not_before::timestamptz{{end}}
