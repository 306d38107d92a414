-- Resends (resend.go): an operator's resend of one record, pending in
-- herald_resend until a worker claims it and stores its outcome.

-- name: resend_from
-- The registration's cursor, the kinds it wants, its stream's low-water
-- mark and the kind of record @seq ('' unless numbered and retained), its
-- row held against an unregister until the pending row is in.
SELECT r.next_seq, r.kinds, s.oldest_seq,
    COALESCE((SELECT rec.kind FROM herald_seq q JOIN herald_record rec ON rec.id = q.id WHERE q.stream = @stream AND q.seq = @seq), '')
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
WHERE r.stream = @stream AND r.id = @id
FOR KEY SHARE OF r

-- name: insert_resend
INSERT INTO herald_resend (stream, id, seq, asked_at, asked_by) VALUES (@stream, @id, @seq, @at, @by)
ON CONFLICT DO NOTHING RETURNING true

-- name: due_resends
-- Up to @limit pending resends of @namespace unleased at @at, oldest asked
-- first, leased to @owner; each row says whether a @limit+1st was pending.
WITH picked AS (
    SELECT p.stream, p.id, p.seq, p.asked_at
    FROM herald_resend p JOIN herald_registration r ON r.stream = p.stream AND r.id = p.id
    WHERE r.namespace = @namespace AND (p.lease_until IS NULL OR p.lease_until <= @at)
    ORDER BY p.asked_at, p.stream, p.id, p.seq
    LIMIT @limit::int + 1
    FOR UPDATE OF p SKIP LOCKED
), claimed AS (
    UPDATE herald_resend p SET lease_owner = @owner, lease_until = @lease_until
    FROM (SELECT * FROM picked ORDER BY asked_at, stream, id, seq LIMIT @limit::int) c
    WHERE p.stream = c.stream AND p.id = c.id AND p.seq = c.seq
    RETURNING p.stream, p.id, p.seq, p.asked_at, p.asked_by
)
SELECT {{template "status"}}, c.seq, c.asked_at, c.asked_by, (SELECT count(*) FROM picked) > @limit::int
FROM claimed c
JOIN herald_registration r ON r.stream = c.stream AND r.id = c.id
JOIN herald_stream s ON s.stream = r.stream
ORDER BY c.asked_at, c.stream, c.id, c.seq

-- name: renew_resends
-- The leases still held by the claims (@streams, @ids, @seqs, @owners in
-- step), to @until.
UPDATE herald_resend p SET lease_until = @until
FROM unnest(@streams::text[], @ids::text[], @seqs::bigint[], @owners::text[]) AS c (stream, id, seq, owner)
WHERE p.stream = c.stream AND p.id = c.id AND p.seq = c.seq AND p.lease_owner = c.owner AND p.lease_owner <> ''
RETURNING p.stream, p.id, p.seq, p.lease_owner

-- name: resent
-- The pending row deleted under its claim, and the evidence in only if it was.
WITH del AS (
    DELETE FROM herald_resend WHERE stream = @stream AND id = @id AND seq = @seq AND lease_owner = @owner RETURNING 1
)
{{template "insert_evidence"}} FROM del
