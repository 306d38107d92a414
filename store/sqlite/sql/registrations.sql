-- Registrations (registrations.go).

-- name: list
-- List's start; it adds one WHERE clause per field of the query that is set.
SELECT {{template "status_columns"}}{{template "status_from"}}

-- name: get
SELECT {{template "status_columns"}}{{template "status_from"}}WHERE r.stream = ? AND r.id = ?

-- name: ensure_stream
INSERT INTO herald_stream (stream) VALUES (?) ON CONFLICT DO NOTHING

-- name: update_registration
-- The rate removed (a stored one, ?10 ''), its pace goes, and one that waited for it
-- alone is due at once; moved to another host (?3), what its old host held goes; when ?13 (a change, store.Registration.SameDelivery) a
-- turn in flight loses its lease, whose end still holds the registration
-- (Store.Register).
UPDATE herald_registration SET lease_owner = CASE WHEN ?13 THEN '' ELSE lease_owner END, namespace = ?1, url = ?2, host = ?3, config = ?4, on_rejected = ?5, kinds = ?6,
				"window" = ?7, retain_max_ns = ?8, retry = ?9, rate = ?10,
				next_attempt_at = CASE WHEN rate <> '' AND ?10 = '' AND next_attempt_at = paced_until
					OR host <> ?3 AND host_failures > 0 THEN NULL ELSE next_attempt_at END,
				host_failures = CASE WHEN host <> ?3 THEN 0 ELSE host_failures END,
				paced_until = CASE WHEN rate <> '' AND ?10 = '' THEN NULL ELSE paced_until END
			WHERE stream = ?11 AND id = ?12

-- name: register_head
SELECT head, sealed, oldest_seq FROM herald_stream WHERE stream = ?

-- name: reseal_page
-- Reseal (registrations.go) reads a page of configs in key order and
-- writes each anew where the row still holds what it read.
SELECT stream, id, config FROM herald_registration WHERE (stream, id) > (?, ?) ORDER BY stream, id LIMIT ?

-- name: reseal
UPDATE herald_registration SET config = ? WHERE stream = ? AND id = ? AND config = ?

-- name: insert_registration
INSERT INTO herald_registration (namespace, url, host, config, on_rejected, kinds, "window", retain_max_ns, retry, rate, stream, id, next_seq)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: delete_registration
DELETE FROM herald_registration WHERE stream = ? AND id = ? RETURNING 1

-- name: complete
DELETE FROM herald_registration WHERE stream = ? AND id = ? AND lease_owner = ?

-- name: stats
SELECT r.namespace,
				SUM(r.parked = 0 AND r.next_seq <= s.head AND r.attempts = 0),
				SUM(r.parked = 0 AND r.next_seq <= s.head AND r.attempts > 0),
				SUM(r.parked = 0 AND r.next_seq > s.head),
				SUM(r.parked = 1 AND r.paused = 0),
				SUM(r.paused = 1),
				SUM(r.lease_until IS NOT NULL AND r.lease_until > ?),
				SUM(MAX(s.head - r.next_seq + 1, 0)){{template "status_from"}}
			GROUP BY r.namespace

-- name: lagging
SELECT {{template "status_columns"}}{{template "status_from"}}WHERE r.next_seq <= s.head ORDER BY s.head - r.next_seq DESC, r.stream, r.id LIMIT ?

-- name: oldest_parked
SELECT {{template "status_columns"}}{{template "status_from"}}WHERE r.parked = 1 AND r.paused = 0 ORDER BY r.parked_at, r.stream, r.id LIMIT 1
