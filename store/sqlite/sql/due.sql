-- Due's claim (claims.go).

-- name: any_woken
SELECT EXISTS (SELECT 1 FROM herald_stream WHERE wake_at <= ?)

-- name: woken
-- woken lists the woken streams at ?1 with their heads, through the
-- partial index herald_stream_wake.
SELECT stream, head FROM herald_stream WHERE wake_at <= ?

-- name: next_cursor
-- next_cursor is the lowest cursor of stream ?1 above ?2 and at most
-- ?3 (its head) where unparked registrations wait, or NULL: one probe
-- of herald_registration_due, which skips the registrations between
-- cursors and never reads one at the head.
SELECT MIN(next_seq) FROM herald_registration WHERE stream = ?1 AND parked = 0 AND next_seq > ?2 AND next_seq <= ?3

-- name: due_of_cursor
-- due_of_cursor reads the first ?5 due registrations at ?3 of stream
-- ?1 at cursor ?4 and of namespace ?2, but those of the hosts at their
-- cap (?6, a JSON array), in claim order, from the narrow columns of
-- herald_registration_due, which gives that order (no sort, no row's
-- config) and stops at the LIMIT; pickDue merges the cursors.
SELECT r.id, r.host, r.next_attempt_at FROM herald_registration AS r
	WHERE r.stream = ?1 AND r.next_seq = ?4 AND r.namespace = ?2 AND r.parked = 0
	AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?3)
	AND (r.lease_until IS NULL OR r.lease_until <= ?3)
	AND r.host NOT IN (SELECT host FROM herald_host WHERE state <> 'up' AND next_probe_at > ?3)
	AND r.host NOT IN (SELECT value FROM json_each(?6))
	ORDER BY r.next_attempt_at, r.id LIMIT ?5

-- name: unserved
SELECT COUNT(*){{template "due_from"}}{{template "due_where"}}AND r.namespace <> ?2

-- name: claim
UPDATE herald_registration SET lease_owner = ?, lease_until = ?, next_attempt_at = ? WHERE stream = ? AND id = ?

-- name: namespace_at
-- The wake marker's bounds (wakeMarker), each one probe of an index.
-- namespace_at is the first namespace after ?3 with unparked
-- registrations at cursor ?2 of stream ?1, the earliest next attempt
-- after ?4 among them (NULL for none), and whether the first in claim
-- order was tried at or before ?4 or never (leased, held or due).
SELECT r.namespace,
		(SELECT MIN(x.next_attempt_at) FROM herald_registration AS x
			WHERE x.stream = ?1 AND x.next_seq = ?2 AND x.namespace = r.namespace AND x.parked = 0 AND x.next_attempt_at > ?4),
		(SELECT x.next_attempt_at IS NULL OR x.next_attempt_at <= ?4 FROM herald_registration AS x
			WHERE x.stream = ?1 AND x.next_seq = ?2 AND x.namespace = r.namespace AND x.parked = 0 ORDER BY x.next_attempt_at LIMIT 1)
	FROM herald_registration AS r WHERE r.stream = ?1 AND r.next_seq = ?2 AND r.namespace > ?3 AND r.parked = 0
	ORDER BY r.namespace LIMIT 1

-- name: lease_end
-- lease_end is the earliest end after ?2 of a lease on stream ?1.
SELECT MIN(lease_until) FROM herald_registration WHERE stream = ?1 AND lease_until > ?2

-- name: host_follows
-- host_follows says whether host ?1 has an unparked registration on
-- stream ?2.
SELECT EXISTS (SELECT 1 FROM herald_registration WHERE host = ?1 AND stream = ?2 AND parked = 0)

-- name: set_wake
UPDATE herald_stream SET wake_at = ? WHERE stream = ?
