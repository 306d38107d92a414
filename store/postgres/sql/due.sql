-- Due (registrations.go): the package documentation, "Idle costs nothing"
-- and "Claiming and fencing". Every probe of herald_registration is a
-- subquery per pending stream (or candidate) behind OFFSET 0, so that the
-- planner never hashes the whole table, whatever its statistics say.

-- none_lagging: no unparked registration of stream s is at or behind its head.
{{define "none_lagging"}}NOT EXISTS (
        SELECT 1 FROM herald_registration r
        WHERE r.stream = s.stream AND NOT r.parked AND r.next_seq <= s.head
        OFFSET 0) -- one probe per stream, never a join of the whole table{{end}}

-- name: planner_seqscan
-- Due's and the sequencer's settings: the planner's statistics lag the
-- pending markers and cannot estimate a snapshot's transactions, so it
-- would scan whole tables and JIT-compile; generic plans spare planning.
SET LOCAL enable_seqscan = off

-- name: planner_jit
SET LOCAL jit = off

-- name: planner_generic
SET LOCAL plan_cache_mode = force_generic_plan

-- name: due_async_commit
SET LOCAL synchronous_commit = off

-- name: clear_candidates
-- Keeps the streams it locks in a setting for clear_pending.
SELECT set_config('herald.idle', coalesce(array_agg(c.stream), '{}')::text, true)
FROM (SELECT s.stream FROM herald_stream s
    WHERE s.pending AND {{template "none_lagging"}}
    LIMIT 10000
    FOR NO KEY UPDATE OF s SKIP LOCKED) c

-- name: clear_pending
UPDATE herald_stream s SET pending = false
WHERE s.stream = ANY(current_setting('herald.idle')::text[]) AND {{template "none_lagging"}}

-- name: pick
-- The claim, in two statements. pick reads, for each pending stream and
-- each cursor at or behind its head where unparked registrations wait, the
-- first @depth of namespace @namespace's due at @at and unleased, in claim
-- order, leaving out the hosts @held (held down, or at their cap): a loose scan of
-- herald_registration_claim, one probe per such cursor (of any namespace)
-- and none past the head, then one range each, stopped by the LIMIT. It
-- reads no registration beyond those, and none at the head.
WITH RECURSIVE cursors (stream, head, next_seq) AS (
    SELECT s.stream, s.head, c.next_seq
    FROM herald_stream s
    CROSS JOIN LATERAL (
        SELECT r.next_seq FROM herald_registration r
        WHERE r.stream = s.stream AND NOT r.parked AND r.next_seq <= s.head
        ORDER BY r.next_seq LIMIT 1) c
    WHERE s.pending
  UNION ALL
    SELECT p.stream, p.head, c.next_seq
    FROM cursors p
    CROSS JOIN LATERAL (
        SELECT r.next_seq FROM herald_registration r
        WHERE r.stream = p.stream AND NOT r.parked AND r.next_seq > p.next_seq AND r.next_seq <= p.head
        ORDER BY r.next_seq LIMIT 1) c
    WHERE p.next_seq < p.head
)
SELECT r.stream, c.next_seq, r.id, r.host
FROM cursors c
CROSS JOIN LATERAL (
    SELECT r.stream, r.id, r.host, r.next_attempt_at FROM herald_registration r
    WHERE r.stream = c.stream AND NOT r.parked AND r.next_seq = c.next_seq AND r.namespace = @namespace
      AND r.next_attempt_at <= @at AND (r.lease_until IS NULL OR r.lease_until <= @at)
      AND r.host <> ALL(@held::text[])
    ORDER BY r.next_attempt_at, r.id
    LIMIT @depth) r
ORDER BY r.next_attempt_at, r.stream, r.id

-- name: claim
-- Leases the first @limit of the picks (@streams, @ids, in claim order)
-- that are still due, unleased and lagging, skipping those another claim
-- has locked, and stamps next_attempt_at = @at; lapsed: the lease it takes
-- had lapsed, not been released (store.Status.Lapsed).
WITH locked AS MATERIALIZED ( -- the locks taken once, in the picks' order, before the UPDATE
    SELECT l.tid, l.lapsed, p.ord, p.stream, p.id
    FROM unnest(@streams::text[], @ids::text[]) WITH ORDINALITY AS p (stream, id, ord)
    CROSS JOIN LATERAL (
        SELECT r.ctid AS tid, r.lease_owner <> '' AS lapsed FROM herald_registration r
        WHERE r.stream = p.stream AND r.id = p.id AND r.namespace = @namespace AND NOT r.parked
          AND r.next_attempt_at <= @at AND (r.lease_until IS NULL OR r.lease_until <= @at)
          AND r.next_seq <= (SELECT s.head FROM herald_stream s WHERE s.stream = r.stream)
        FOR NO KEY UPDATE SKIP LOCKED) l
    LIMIT @limit::int
), claimed AS (
    UPDATE herald_registration r SET lease_owner = @owner, lease_until = @lease_until, next_attempt_at = @at
    WHERE r.ctid = ANY (ARRAY(SELECT tid FROM locked))
    RETURNING r.*
)
SELECT {{template "status"}}, l.lapsed
FROM claimed r
JOIN locked l ON l.stream = r.stream AND l.id = r.id
CROSS JOIN LATERAL (SELECT s.head, s.final_seq FROM herald_stream s WHERE s.stream = r.stream OFFSET 0) s -- a probe per claimed row, not a join of every stream
ORDER BY l.ord

-- name: unserved
-- The due registrations of pending streams at @at of other namespaces than
-- @namespace, not of a host @held: RunOnce's report only
-- (DueQuery.CountUnserved), it reads them all.
SELECT count(*)
FROM herald_stream s
CROSS JOIN LATERAL (
    SELECT 1 FROM herald_registration r
    WHERE r.stream = s.stream AND NOT r.parked AND r.next_seq <= s.head
      AND r.namespace <> @namespace AND r.next_attempt_at <= @at
      AND (r.lease_until IS NULL OR r.lease_until <= @at)
      AND r.host <> ALL(@held::text[])
    OFFSET 0) c -- one probe per pending stream, never a join of the whole table
WHERE s.pending
