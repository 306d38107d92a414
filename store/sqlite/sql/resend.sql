-- Resends (resend.go).

-- name: resend_kind
-- The kinds registration (?1, ?2) wants and the kind of record ?3 of its
-- stream ('' when it is not retained).
SELECT r.kinds, COALESCE((SELECT kind FROM herald_record WHERE stream = ?1 AND seq = ?3), '')
			FROM herald_registration AS r WHERE r.stream = ?1 AND r.id = ?2

-- name: resend_insert
INSERT INTO herald_resend (stream, id, seq, asked_at, asked_by) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING RETURNING 1

-- name: any_resend
-- Whether a resend of namespace ?1 is pending and unleased at ?2:
-- DueResends' look from a read snapshot, without the write lock (another
-- namespace's pending resend must not cost this one's claims a write).
SELECT EXISTS (SELECT 1 FROM herald_resend AS p
			JOIN herald_registration AS r ON r.stream = p.stream AND r.id = p.id
			WHERE r.namespace = ?1 AND (p.lease_until IS NULL OR p.lease_until <= ?2))

-- name: due_resends
-- The pending resends of namespace ?1 unleased at ?2, oldest asked
-- first, ?3 at most.
SELECT p.stream, p.id, p.seq, p.asked_at, p.asked_by FROM herald_resend AS p
			JOIN herald_registration AS r ON r.stream = p.stream AND r.id = p.id
			WHERE r.namespace = ?1 AND (p.lease_until IS NULL OR p.lease_until <= ?2)
			ORDER BY p.asked_at, p.stream, p.id, p.seq LIMIT ?3

-- name: lease_resend
UPDATE herald_resend SET lease_owner = ?, lease_until = ? WHERE stream = ? AND id = ? AND seq = ?

-- name: renew_resend
UPDATE herald_resend SET lease_until = ? WHERE stream = ? AND id = ? AND seq = ? AND lease_owner = ?

-- name: delete_resend
DELETE FROM herald_resend WHERE stream = ? AND id = ? AND seq = ? AND lease_owner = ? RETURNING 1
