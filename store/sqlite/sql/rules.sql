-- The fragments several statements of sql/*.sql share (sqlfile package doc):
-- each rule written once.

{{define "actor_key_columns"}}id, algorithm, fingerprint, version, created_at, rotated_at{{end}}

{{define "record_columns"}}stream, seq, id, kind, content_type, payload, final, appended_at, traceparent, tracestate{{end}}

-- status_columns select a registration joined with its stream (aliases r,
-- s), in the order scanStatus reads them.
{{define "status_columns"}}r.stream, r.id, r.namespace, r.url,
	IFNULL(r.config, (SELECT u.config FROM herald_subscription AS u WHERE u.prefix = r.subscription AND u.id = r.id)), r.on_rejected, r.next_seq, r.attempts,
	r.next_attempt_at, r.parked, r.parked_at, r.last_error, r.lease_owner, r.lease_until, r.kinds, s.head, s.sealed, r.host_failures, r."window",
	r.retain_max_ns, r.subscription, r.retry, r.failing_since, r.paused, r.rate, r.paced_until{{end}}

{{define "status_from"}} FROM herald_registration AS r JOIN herald_stream AS s ON s.stream = r.stream {{end}}

-- due_from joins each woken stream to its registrations. CROSS JOIN fixes
-- SQLite's join order: streams first, through the partial index
-- herald_stream_wake, so that idle streams are never read.
{{define "due_from"}} FROM herald_stream AS s CROSS JOIN herald_registration AS r ON r.stream = s.stream {{end}}

-- due_where selects due registrations (alias r) on woken streams (alias s) at
-- instant ?1, but those held for their host (not up, next probe later).
{{define "due_where"}} WHERE s.wake_at <= ?1
	AND r.parked = 0
	AND r.next_seq <= s.head
	AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?1)
	AND (r.lease_until IS NULL OR r.lease_until <= ?1)
	AND r.host NOT IN (SELECT host FROM herald_host WHERE state <> 'up' AND next_probe_at > ?1) {{end}}

{{define "host_columns"}}host, state, since, failures, probes, next_probe_at, last_error, last_failure_at, failing_since{{end}}

-- state_columns end a registration update with what update reads.
{{define "state_columns"}} RETURNING next_seq, parked, next_attempt_at, lease_until{{end}}

{{define "fenced_where"}} WHERE stream = ?1 AND id = ?2 AND lease_owner = ?3{{template "state_columns"}}{{end}}

-- cursor_moved is what advance and checkpoint set: the cursor
-- ?4 if that is forward, and the failure counts reset if it moved.
{{define "cursor_moved"}}UPDATE herald_registration SET
				attempts = CASE WHEN ?4 > next_seq THEN 0 ELSE attempts END,
				host_failures = CASE WHEN ?4 > next_seq THEN 0 ELSE host_failures END,
				last_error = CASE WHEN ?4 > next_seq THEN '' ELSE last_error END,
				next_seq = MAX(next_seq, ?4){{end}}

-- failed is what retry and park set: one more attempt at the
-- cursor ?4 (the first if it moved, which starts a run of failures at
-- ?7), the reason ?6, the lease released.
{{define "failed"}}UPDATE herald_registration SET
				attempts = CASE WHEN ?4 > next_seq THEN 1 ELSE attempts + 1 END, host_failures = 0,
				failing_since = CASE WHEN ?4 > next_seq OR attempts = 0 THEN ?7 ELSE failing_since END,
				next_seq = MAX(next_seq, ?4), last_error = ?6, lease_owner = '', lease_until = NULL{{end}}

{{define "token_columns"}}id, hash, name, role, scope, created_at, last_used_at, revoked_at{{end}}
