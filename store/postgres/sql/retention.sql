-- Retention (retention.go). The stream's row lock keeps every cursor from
-- moving below the new low-water mark while it is computed.

-- prunable_hosts: a host row goes once no registration is of the host and
-- it failed last at or before @cutoff. One pass of the registrations (an
-- anti-join): an index on their host would cost every cursor write an
-- entry. HostFailed locks the row and moves last_failure_at: a concurrent
-- delete re-checks it and keeps the row.
{{define "prunable_hosts"}}FROM herald_host h WHERE coalesce(h.last_failure_at, h.since) <= @cutoff
  AND NOT EXISTS (SELECT 1 FROM herald_registration r WHERE r.host = h.host){{end}}

-- name: prune_candidates
SELECT stream FROM herald_stream WHERE stream >= @from ORDER BY stream LIMIT @limit

-- name: prune_lock
SELECT head, final_seq IS NOT NULL, oldest_seq FROM herald_stream WHERE stream = @stream
FOR NO KEY UPDATE SKIP LOCKED

-- name: prune_low
SELECT min(next_seq), count(*) FROM herald_registration WHERE stream = @stream

-- name: prune_refused
WITH gone AS (
    DELETE FROM herald_seq q USING herald_record r
    WHERE q.stream = @stream AND q.refused IS NOT NULL AND r.id = q.id AND r.appended_at <= @cutoff
    RETURNING q.id
)
DELETE FROM herald_record WHERE id IN (SELECT id FROM gone)

-- name: prune_run
SELECT q.seq, r.appended_at, length(r.payload) FROM herald_seq q JOIN herald_record r ON r.id = q.id
WHERE q.stream = @stream AND q.seq >= @from_seq AND q.seq < @to_seq ORDER BY q.seq LIMIT @limit

-- name: prune_records
WITH gone AS (DELETE FROM herald_seq WHERE stream = @stream AND seq < @to_seq RETURNING id)
DELETE FROM herald_record WHERE id IN (SELECT id FROM gone)

-- name: prune_mark
UPDATE herald_stream SET oldest_seq = @to_seq WHERE stream = @stream

-- name: prune_stream
-- A sealed, completed stream goes once nothing of it is left, none waiting
-- for the sequencer either (it would start a stream anew).
DELETE FROM herald_stream WHERE stream = @stream
  AND NOT EXISTS (SELECT 1 FROM herald_seq WHERE stream = @stream AND seq IS NOT NULL)
  AND NOT EXISTS (SELECT 1 FROM herald_seq WHERE stream = @stream AND refused IS NOT NULL)
  AND NOT EXISTS ({{template "waiting_running" (args "cols" "1" "cond" "r.stream = @stream" "limit" "")}})
  AND NOT EXISTS ({{template "waiting_new" (args "cols" "1" "cond" "r.stream = @stream" "limit" "LIMIT 1")}})

-- name: prune_evidence
DELETE FROM herald_evidence WHERE stream = @stream AND at <= @cutoff AND n NOT IN (
    SELECT max(e.n) FROM herald_evidence e
    JOIN herald_registration r ON r.stream = e.stream AND r.id = e.registration
    WHERE e.stream = @stream AND r.parked AND e.event = @parked
    GROUP BY e.registration)

-- name: prune_hosts
WITH gone AS (DELETE {{template "prunable_hosts"}} RETURNING 1) SELECT count(*) FROM gone

-- name: count_prunable_hosts
SELECT count(*) {{template "prunable_hosts"}}

-- name: streams
SELECT s.stream, s.head, s.final_seq IS NOT NULL, s.oldest_seq,
    (SELECT count(*) FROM herald_registration r WHERE r.stream = s.stream),
    (SELECT coalesce(sum(length(x.payload)), 0) FROM herald_seq q JOIN herald_record x ON x.id = q.id
     WHERE q.stream = s.stream AND q.seq >= s.oldest_seq)
FROM herald_stream s
WHERE (@stream::text = '' OR s.stream = @stream) AND s.stream > @after
ORDER BY s.stream
LIMIT @limit
