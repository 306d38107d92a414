-- Registrations (registrations.go). A status is what scanStatus reads: the
-- status template's columns, r the registration, s its stream.

-- A registration made by a subscription has no config of its own: it reads
-- the subscription's.
{{define "status"}}r.stream, r.id, r.namespace, r.url,
       coalesce(r.config, (SELECT u.config FROM herald_subscription u WHERE u.prefix = r.subscription AND u.id = r.id)), r.on_rejected, r.next_seq, r.attempts,
       r.next_attempt_at, r.parked, r.parked_at, r.last_error, r.lease_owner, r.lease_until, r.host_failures, r.kinds, r."window",
       r.retain_max_ns, r.subscription, r.retry, r.failing_since, r.paused, r.rate, r.paced_until, s.head, s.final_seq IS NOT NULL{{end}}
{{define "status_from"}}{{template "status"}}
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream{{end}}

-- name: mark_stream
-- Lock the stream row first (the sequencer's lock order) and set the
-- pending marker: a registration may lag after the change.
INSERT INTO herald_stream AS s (stream, pending) VALUES (@stream, true)
ON CONFLICT (stream) DO UPDATE SET pending = true RETURNING s.head, s.final_seq IS NOT NULL, s.oldest_seq

-- name: registration_exists
SELECT EXISTS (SELECT 1 FROM herald_registration WHERE stream = @stream AND id = @id)

-- name: upsert_registration
WITH r AS (
INSERT INTO herald_registration AS r
    (stream, id, namespace, url, config, on_rejected, next_seq, next_attempt_at, host, kinds, "window", retain_max_ns, retry, rate)
VALUES (@stream, @id, @namespace, @url, @config, @on_rejected, @next_seq, @next_attempt_at, @host, @kinds, @window, @retain_max_ns, @retry, @rate)
ON CONFLICT (stream, id) DO UPDATE
SET namespace = excluded.namespace, url = excluded.url, config = excluded.config, on_rejected = excluded.on_rejected,
    host = excluded.host, kinds = excluded.kinds, "window" = excluded."window", retain_max_ns = excluded.retain_max_ns,
    retry = excluded.retry, rate = excluded.rate,
    -- a change (@revoke: store.Registration.SameDelivery) takes a turn's lease, whose end still holds it
    lease_owner = CASE WHEN @revoke::boolean THEN '' ELSE r.lease_owner END,
    -- the rate removed, its pace goes, and one that waited for it alone is due at once
    -- and one moved to another host drops what its old host held
    next_attempt_at = CASE WHEN r.rate <> '' AND excluded.rate = '' AND r.next_attempt_at = r.paced_until
        OR r.host <> excluded.host AND r.host_failures > 0 THEN excluded.next_attempt_at ELSE r.next_attempt_at END,
    host_failures = CASE WHEN r.host <> excluded.host THEN 0 ELSE r.host_failures END,
    paced_until = CASE WHEN r.rate <> '' AND excluded.rate = '' THEN NULL ELSE r.paced_until END
RETURNING r.*)
SELECT {{template "status"}} FROM r JOIN herald_stream s ON s.stream = r.stream

-- name: delete_registration
DELETE FROM herald_registration WHERE stream = @stream AND id = @id

-- name: get
SELECT {{template "status_from"}} WHERE r.stream = @stream AND r.id = @id

-- name: get_locked
-- Register's read, after the stream's lock: the row stays as read until the
-- write, so that an Update over a row deleted meanwhile finds none rather
-- than inserting it again.
SELECT {{template "status_from"}} WHERE r.stream = @stream AND r.id = @id FOR UPDATE OF r

-- name: list
SELECT {{template "status_from"}}
WHERE (@stream::text = '' OR r.stream = @stream) AND (@namespace::text = '' OR r.namespace = @namespace)
  AND (NOT @parked::boolean OR r.parked) AND (NOT @lagging::boolean OR r.next_seq <= s.head)
  AND (r.stream, r.id) > (@after_stream::text, @after_id::text)
  AND (@subscription::text = '' OR r.subscription = @subscription AND (@id::text = '' OR r.id = @id))
ORDER BY r.stream, r.id
LIMIT @limit

-- name: stats_namespaces
SELECT r.namespace,
    count(*) FILTER (WHERE NOT r.parked AND r.next_seq <= s.head AND r.attempts = 0),
    count(*) FILTER (WHERE NOT r.parked AND r.next_seq <= s.head AND r.attempts > 0),
    count(*) FILTER (WHERE NOT r.parked AND r.next_seq > s.head),
    count(*) FILTER (WHERE r.parked AND NOT r.paused),
    count(*) FILTER (WHERE r.paused),
    count(*) FILTER (WHERE r.lease_until > @at),
    coalesce(sum(GREATEST(s.head - r.next_seq + 1, 0)), 0)::bigint
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
GROUP BY r.namespace

-- name: stats_lagging
SELECT {{template "status_from"}}
WHERE r.next_seq <= s.head
ORDER BY s.head - r.next_seq DESC, r.stream, r.id
LIMIT @limit

-- name: stats_oldest_parked
SELECT {{template "status_from"}}
WHERE r.parked AND NOT r.paused
ORDER BY r.parked_at, r.stream, r.id
LIMIT 1

-- name: reseal_page
-- Reseal (registrations.go) reads a page of configs in key order and
-- writes each anew where the row still holds what it read.
SELECT stream, id, config FROM herald_registration WHERE (stream, id) > (@after_stream, @after_id)
ORDER BY stream, id LIMIT @limit

-- name: reseal
UPDATE herald_registration r SET config = n.new
FROM unnest(@streams::text[], @ids::text[], @olds::bytea[], @news::bytea[]) AS n(stream, id, old, new)
WHERE r.stream = n.stream AND r.id = n.id AND r.config = n.old
