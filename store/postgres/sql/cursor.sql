-- Cursors, failures, operator moves and evidence (cursor.go, hosts.go): the
-- package documentation, "Claiming and fencing".

-- name: fence
SELECT r.lease_owner, s.head, r.next_seq, r.host_failures, r.namespace, r.url, r.next_attempt_at, r.parked, r.paused
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
WHERE r.stream = @stream AND r.id = @id
FOR NO KEY UPDATE OF r

-- name: advance
UPDATE herald_registration r SET {{template "cursor_moved" "@next_seq::bigint"}}, lease_owner = '', lease_until = NULL
{{template "fenced_by"}}

-- name: checkpoint
UPDATE herald_registration r SET {{template "cursor_moved" "@next_seq::bigint"}}
{{template "fenced_by"}}

-- name: pace
-- The next burst no earlier than @until, nor the next claim.
UPDATE herald_registration r SET paced_until = @until, next_attempt_at = GREATEST(r.next_attempt_at, @until)
{{template "fenced_by"}}

-- name: retry
-- An attempt charged at the cursor reached: the first if it moved.
WITH upd AS (
    UPDATE herald_registration r
    SET attempts = CASE WHEN @next_seq::bigint > r.next_seq THEN 1 ELSE r.attempts + 1 END, host_failures = 0,
        failing_since = CASE WHEN @next_seq::bigint > r.next_seq OR r.attempts = 0 THEN @at ELSE r.failing_since END,
        next_attempt_at = @not_before{{template "failed"}} -- a rate's pace is in not_before already (push's turn.fail)

-- name: park
WITH upd AS (
    UPDATE herald_registration r
    SET attempts = CASE WHEN @next_seq::bigint > r.next_seq THEN 1 ELSE r.attempts + 1 END, host_failures = 0,
        failing_since = CASE WHEN @next_seq::bigint > r.next_seq OR r.attempts = 0 THEN @at ELSE r.failing_since END,
        parked = true, parked_at = @at{{template "failed"}}

-- name: host_failed
-- No attempt charged: the host's failures count instead (store.ChargeHost).
WITH upd AS (
    UPDATE herald_registration r
    SET attempts = CASE WHEN @next_seq::bigint > r.next_seq THEN 0 ELSE r.attempts END, host_failures = @host_failures,
        next_attempt_at = GREATEST(@not_before, r.paced_until){{template "failed"}}

-- name: generic_plans
-- AdvanceBatch: a custom plan of unnest cost more CPU than the statement;
-- this holds until the implicit transaction ends.
SELECT set_config('plan_cache_mode', 'force_generic_plan', true)

-- name: fence_batch
-- fence for many claims (@streams, @ids), sorted by key, none twice.
SELECT u.ord, r.lease_owner, r.head
FROM unnest(@streams::text[], @ids::text[]) WITH ORDINALITY AS u (stream, id, ord)
CROSS JOIN LATERAL (
    SELECT r.lease_owner, (SELECT s.head FROM herald_stream s WHERE s.stream = r.stream) AS head
    FROM herald_registration r
    WHERE r.stream = u.stream AND r.id = u.id
    FOR NO KEY UPDATE OF r) r
ORDER BY u.ord

-- name: advance_batch
-- advance for the claims of fence_batch.
WITH u AS MATERIALIZED ( -- the rows' ctids once, read by the UPDATE's two conditions
    SELECT u.ord, u.next_seq, r.tid
    FROM unnest(@streams::text[], @ids::text[], @owners::text[], @next_seqs::bigint[]) WITH ORDINALITY AS u (stream, id, owner, next_seq, ord)
    CROSS JOIN LATERAL (
        SELECT r.ctid AS tid FROM herald_registration r
        WHERE r.stream = u.stream AND r.id = u.id AND r.lease_owner = u.owner
          AND u.next_seq <= (SELECT s.head + 1 FROM herald_stream s WHERE s.stream = u.stream)
        OFFSET 0) r -- a probe per claim, never a join of the whole table
)
UPDATE herald_registration r
SET {{template "cursor_moved" "u.next_seq"}}, lease_owner = '', lease_until = NULL
FROM u
WHERE r.ctid = ANY (ARRAY(SELECT tid FROM u)) AND r.ctid = u.tid
RETURNING u.ord

-- name: complete
DELETE FROM herald_registration WHERE stream = @stream AND id = @id AND lease_owner = @owner

-- name: unpark
UPDATE herald_registration
SET parked = false, parked_at = NULL, attempts = 0, host_failures = 0, next_attempt_at = @at,
    lease_owner = '', lease_until = NULL
WHERE stream = @stream AND id = @id

-- name: pause
-- An operator's stop: parked too, so that every claim skips it.
UPDATE herald_registration
SET parked = true, paused = true, parked_at = @at, last_error = @last_error, lease_owner = '', lease_until = NULL
WHERE stream = @stream AND id = @id

-- name: resume
UPDATE herald_registration
SET parked = false, paused = false, parked_at = NULL, attempts = 0, host_failures = 0, next_attempt_at = @at,
    last_error = @last_error, lease_owner = '', lease_until = NULL
WHERE stream = @stream AND id = @id

-- name: move
UPDATE herald_registration
SET next_seq = @next_seq, attempts = 0, host_failures = 0, next_attempt_at = @at, last_error = '',
    lease_owner = '', lease_until = NULL
WHERE stream = @stream AND id = @id

-- name: insert_evidence
-- After a lock of the registration's row.
{{template "insert_evidence"}}
WHERE EXISTS (SELECT 1 FROM herald_registration WHERE stream = @stream AND id = @id)

-- name: trim_evidence
-- The newest @keep of the registration stay.
DELETE FROM herald_evidence
WHERE stream = @stream AND registration = @id AND n <= (
    SELECT n FROM herald_evidence WHERE stream = @stream AND registration = @id
    ORDER BY n DESC OFFSET @keep LIMIT 1)

-- name: evidence
SELECT at, event, seq, record_id, message_id, attempt, status, body, location, duration_ns, error, not_before
FROM herald_evidence WHERE stream = @stream AND registration = @id
ORDER BY n DESC LIMIT @limit
