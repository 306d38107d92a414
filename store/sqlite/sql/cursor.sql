-- Cursors, failures, operator moves and evidence (cursor.go). The writes
-- under a claim follow fence (fenced) and end in fenced_where:
-- registration ?1/?2, its lease still ?3's.

-- name: rewake
UPDATE herald_stream SET wake_at = MIN(IFNULL(wake_at, ?1), ?1) WHERE stream = ?2 AND head >= ?3

-- name: fence
SELECT r.lease_owner, IFNULL(s.head, 0), r.next_seq, r.host_failures FROM herald_registration AS r
		LEFT JOIN herald_stream AS s ON s.stream = r.stream WHERE r.stream = ? AND r.id = ?

-- name: advance
{{template "cursor_moved"}}, lease_owner = '', lease_until = NULL{{template "fenced_where"}}

-- name: checkpoint
{{template "cursor_moved"}}{{template "fenced_where"}}

-- name: pace
-- pace: the next burst no earlier than ?4, nor the next claim.
UPDATE herald_registration SET paced_until = ?4, next_attempt_at = MAX(IFNULL(next_attempt_at, ?4), ?4){{template "fenced_where"}}

-- name: retry
{{template "failed"}}, next_attempt_at = ?5{{template "fenced_where"}}

-- name: park
{{template "failed"}}, parked = 1, parked_at = ?5{{template "fenced_where"}}

-- name: unpark
UPDATE herald_registration SET
				parked = 0, parked_at = NULL, attempts = 0, host_failures = 0, next_attempt_at = ?1,
				lease_owner = '', lease_until = NULL
			WHERE stream = ?2 AND id = ?3 AND parked = 1 AND paused = 0{{template "state_columns"}}

-- name: pause
-- pause and resume: registration ?3/?4, at ?1, the evidence's text ?2.
UPDATE herald_registration SET
				parked = 1, paused = 1, parked_at = ?1, last_error = ?2, lease_owner = '', lease_until = NULL
			WHERE stream = ?3 AND id = ?4 AND paused = 0{{template "state_columns"}}

-- name: resume
UPDATE herald_registration SET
				parked = 0, paused = 0, parked_at = NULL, attempts = 0, host_failures = 0, next_attempt_at = ?1,
				last_error = ?2, lease_owner = '', lease_until = NULL
			WHERE stream = ?3 AND id = ?4 AND paused = 1{{template "state_columns"}}

-- name: move_from
SELECT r.next_seq, s.head, s.oldest_seq{{template "status_from"}}WHERE r.stream = ? AND r.id = ?

-- name: move
UPDATE herald_registration SET
				next_seq = ?1, attempts = 0, host_failures = 0, next_attempt_at = ?2, last_error = '',
				lease_owner = '', lease_until = NULL
			WHERE stream = ?3 AND id = ?4{{template "state_columns"}}

-- name: insert_evidence
INSERT INTO herald_evidence
		(stream, registration, at, event, seq, record_id, message_id, attempt, status, body, location, duration_ns, error, not_before)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: trim_evidence
-- Keep the registration's newest ?3 (store.MaxEvidence).
DELETE FROM herald_evidence WHERE stream = ?1 AND registration = ?2 AND id <= (
			SELECT id FROM herald_evidence WHERE stream = ?1 AND registration = ?2 ORDER BY id DESC LIMIT 1 OFFSET ?3)

-- name: evidence
SELECT at, event, seq, record_id, message_id, attempt, status, body, location,
				duration_ns, error, not_before
			FROM herald_evidence WHERE stream = ? AND registration = ? ORDER BY id DESC LIMIT ?
