-- Host health (hosts.go, and Due's probes). Lock order: a registration's row
-- before its host's; Due locks host rows with SKIP LOCKED only.

{{define "host"}}host, state, since, failures, probes, next_probe_at, last_error, last_failure_at, failing_since{{end}}

-- name: renew
-- The leases still held by the claims (@streams, @ids, @owners in step,
-- sorted by key), to @until: locked in key order, as AdvanceBatch locks, so
-- that the two never deadlock.
WITH c AS MATERIALIZED ( -- locked in this order before the UPDATE writes any
    SELECT r.tid
    FROM unnest(@streams::text[], @ids::text[], @owners::text[]) WITH ORDINALITY AS u (stream, id, owner, ord)
    CROSS JOIN LATERAL (
        SELECT r.ctid AS tid FROM herald_registration r
        WHERE r.stream = u.stream AND r.id = u.id AND r.lease_owner = u.owner AND r.lease_owner <> ''
        FOR NO KEY UPDATE OF r) r
    ORDER BY u.ord
)
UPDATE herald_registration r SET lease_until = @until
WHERE r.ctid = ANY (ARRAY(SELECT tid FROM c))
RETURNING r.stream, r.id, r.lease_owner

-- name: lock_probes
-- The hosts whose probe is due at @at: this claim owns those it locks.
SELECT {{template "host"}} FROM herald_host
WHERE state <> 'up' AND next_probe_at <= @at
ORDER BY host
FOR NO KEY UPDATE SKIP LOCKED

-- name: troubled_hosts
-- Read before the claim, which takes the held hosts as an array: a few
-- comparisons cost a row less than a lookup of its host.
SELECT {{template "host"}} FROM herald_host WHERE state <> 'up' OR failures > 0

-- name: move_probe
UPDATE herald_host SET probes = @probes, next_probe_at = @next_probe_at WHERE host = @host

-- name: ensure_host
INSERT INTO herald_host (host, state, since) VALUES (@host, 'up', @at) ON CONFLICT DO NOTHING

-- name: host_scheme
-- store.HostSchemes: the scheme a host accepted after refusing another.
SELECT signature_scheme, scheme_at FROM herald_host WHERE host = @host

-- name: set_host_scheme
-- A host without a row gets one, up since @at; its health is left alone.
INSERT INTO herald_host (host, state, since, signature_scheme, scheme_at) VALUES (@host, 'up', @at, @scheme, @at)
ON CONFLICT (host) DO UPDATE SET signature_scheme = @scheme, scheme_at = @at

-- name: lock_host
SELECT {{template "host"}} FROM herald_host WHERE host = @host FOR NO KEY UPDATE

-- name: put_host
UPDATE herald_host SET state = @state, since = @since, failures = @failures, probes = @probes, next_probe_at = @next_probe_at,
    last_error = @last_error, last_failure_at = @last_failure_at, failing_since = @failing_since
WHERE host = @host

-- name: hold_host
-- store.Host.HeldTo: a held host's unparked registrations wait for its
-- probe, out of the claim's index range (herald_registration_host).
UPDATE herald_registration SET next_attempt_at = @to
WHERE host = @host AND NOT parked AND next_attempt_at < @to

-- name: release_host
UPDATE herald_registration SET next_attempt_at = @to
WHERE host = @host AND NOT parked AND next_attempt_at = @from

-- name: hosts
WITH held AS (
    SELECT r.host, count(*) AS n
    FROM herald_registration r
    JOIN herald_host d ON d.host = r.host AND d.state <> 'up'
    JOIN herald_stream s ON s.stream = r.stream
    WHERE NOT r.parked AND r.next_seq <= s.head
    GROUP BY r.host
)
SELECT h.host, h.state, h.since, h.failures, h.probes, h.next_probe_at, h.last_error, h.last_failure_at, h.failing_since,
    coalesce(held.n, 0), h.signature_scheme, h.scheme_at
FROM herald_host h LEFT JOIN held ON held.host = h.host
WHERE (@host::text = '' OR h.host = @host) AND (@state::text = '' OR h.state = @state) AND h.host > @after
ORDER BY h.host
LIMIT @limit
