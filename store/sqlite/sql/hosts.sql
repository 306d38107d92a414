-- Host health (claims.go).

-- name: renew
UPDATE herald_registration SET lease_until = ?1 WHERE stream = ?2 AND id = ?3 AND lease_owner = ?4 AND lease_owner <> ''

-- name: get_host
SELECT {{template "host_columns"}} FROM herald_host WHERE host = ?

-- name: host_scheme
-- store.HostSchemes: a host without a row gets one, up since ?3.
SELECT signature_scheme, scheme_at FROM herald_host WHERE host = ?

-- name: set_host_scheme
INSERT INTO herald_host (host, state, since, signature_scheme, scheme_at) VALUES (?1, 'up', ?3, ?2, ?3)
		ON CONFLICT (host) DO UPDATE SET signature_scheme = ?2, scheme_at = ?3

-- name: put_host
INSERT INTO herald_host ({{template "host_columns"}}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
		ON CONFLICT (host) DO UPDATE SET state = ?2, since = ?3, failures = ?4, probes = ?5, next_probe_at = ?6,
			last_error = ?7, last_failure_at = ?8, failing_since = ?9

-- name: hold_host
-- store.Host.HeldTo: ?1 the host; hold: to ?2; release: from ?2 to ?3.
UPDATE herald_registration SET next_attempt_at = ?2
			WHERE host = ?1 AND parked = 0 AND (next_attempt_at IS NULL OR next_attempt_at < ?2)

-- name: release_host
UPDATE herald_registration SET next_attempt_at = ?3
			WHERE host = ?1 AND parked = 0 AND next_attempt_at = ?2

-- name: host_failed
-- A host-level failure: the turn ends at cursor ?4 with no attempt
-- charged, ?7 host failures, due again at ?5 or its pace if later, the
-- reason ?6.
UPDATE herald_registration SET
				attempts = CASE WHEN ?4 > next_seq THEN 0 ELSE attempts END,
				next_seq = MAX(next_seq, ?4), host_failures = ?7,
				next_attempt_at = MAX(?5, IFNULL(paced_until, ?5)), last_error = ?6, lease_owner = '', lease_until = NULL{{template "fenced_where"}}

-- name: wake_host_streams
UPDATE herald_stream SET wake_at = ?1
			WHERE stream IN (SELECT stream FROM herald_registration WHERE host = ?2 AND parked = 0)

-- name: hosts
SELECT {{template "host_columns"}}, signature_scheme, scheme_at FROM herald_host
			WHERE (?1 = '' OR host = ?1) AND (?2 = '' OR state = ?2) AND host > ?3 ORDER BY host LIMIT ?4

-- name: held
-- The held registrations of the hosts not up, counted per host.
SELECT r.host, COUNT(*){{template "status_from"}}
			JOIN herald_host AS d ON d.host = r.host AND d.state <> 'up'
			WHERE r.parked = 0 AND r.next_seq <= s.head GROUP BY r.host

-- name: troubled_hosts
SELECT {{template "host_columns"}} FROM herald_host WHERE state <> 'up' OR failures > 0
