-- Retention (retention.go).

-- name: prune_candidates
SELECT s.stream, s.head, s.sealed, s.oldest_seq,
				(SELECT COUNT(*) FROM herald_registration AS r WHERE r.stream = s.stream)
			FROM herald_stream AS s WHERE s.stream >= ? ORDER BY s.stream LIMIT ?

-- name: prune_run
SELECT seq, appended_at, length(payload) FROM herald_record
		WHERE stream = ? AND seq >= ? AND seq < ? ORDER BY seq LIMIT ?

-- name: prune_holders
SELECT next_seq, retain_max_ns, namespace FROM herald_registration WHERE stream = ?

-- name: prune_behind
SELECT {{template "status_columns"}}{{template "status_from"}}WHERE r.stream = ? AND r.next_seq < ? ORDER BY r.id

-- name: expire
UPDATE herald_registration SET next_seq = ?, attempts = 0, host_failures = 0, last_error = ?
				WHERE stream = ? AND id = ?

-- name: prune_records
DELETE FROM herald_record WHERE stream = ? AND seq < ?

-- name: prune_mark
UPDATE herald_stream SET oldest_seq = ? WHERE stream = ?

-- name: prune_stream
DELETE FROM herald_stream WHERE stream = ?

-- name: prune_evidence
-- The evidence older than the cutoff ?2, but a parked registration's
-- newest park evidence (?3).
DELETE FROM herald_evidence WHERE stream = ?1 AND at <= ?2 AND id NOT IN (
						SELECT MAX(e.id) FROM herald_evidence AS e JOIN herald_registration AS r
							ON r.stream = e.stream AND r.id = e.registration
						WHERE e.stream = ?1 AND r.parked = 1 AND e.event = ?3 GROUP BY e.registration)

-- name: prune_hosts
-- The hosts no registration is of that failed last at or before ?1: the
-- IN list is built once, so a pass reads the registrations once.
DELETE FROM herald_host WHERE IFNULL(last_failure_at, since) <= ?1
				AND host NOT IN (SELECT host FROM herald_registration)

-- name: incremental_vacuum
PRAGMA incremental_vacuum(0)

-- name: streams
SELECT s.stream, s.head, s.sealed, s.oldest_seq,
				(SELECT COUNT(*) FROM herald_registration AS r WHERE r.stream = s.stream),
				(SELECT IFNULL(SUM(length(payload)), 0) FROM herald_record AS x WHERE x.stream = s.stream)
			FROM herald_stream AS s
			WHERE (?1 = '' OR s.stream = ?1) AND s.stream > ?2
			ORDER BY s.stream LIMIT ?3
