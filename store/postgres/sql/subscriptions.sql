-- Subscriptions (subscriptions.go). A stream created later is materialised
-- by the trigger herald_stream_subscriptions, in the sequencer step that
-- creates its row; Subscribe materialises the streams that exist. The
-- table's lock (SHARE ROW EXCLUSIVE here and in Unsubscribe, ROW EXCLUSIVE
-- in the trigger) orders them, so that no stream falls between them and
-- none materialises a registration of a subscription being removed. Not an
-- advisory lock: a producer may hold any advisory key, none of this.

-- name: subscribe_lock
LOCK TABLE herald_subscription IN SHARE ROW EXCLUSIVE MODE

-- name: upsert_subscription
INSERT INTO herald_subscription
    (prefix, id, namespace, url, host, config, on_rejected, kinds, "window", retain_max_ns, retry, from_head)
VALUES (@prefix, @id, @namespace, @url, @host, @config, @on_rejected, @kinds, @window, @retain_max_ns, @retry, @from_head)
ON CONFLICT (prefix, id) DO UPDATE SET namespace = excluded.namespace, url = excluded.url, host = excluded.host,
    config = excluded.config, on_rejected = excluded.on_rejected, kinds = excluded.kinds, "window" = excluded."window",
    retain_max_ns = excluded.retain_max_ns, retry = excluded.retry

-- name: materialise
-- @end is store.PrefixEnd(@prefix): the streams under the prefix are an
-- index range.
INSERT INTO herald_registration (stream, id, namespace, url, host, on_rejected, kinds, "window",
    retain_max_ns, retry, subscription, next_seq, next_attempt_at)
SELECT s.stream, u.id, u.namespace, u.url, u.host, u.on_rejected, u.kinds, u."window",
    u.retain_max_ns, u.retry, u.prefix, CASE WHEN u.from_head THEN s.head + 1 ELSE s.oldest_seq END, '0001-01-01 00:00:00+00'
FROM herald_subscription u JOIN herald_stream s ON s.stream >= @prefix AND s.stream < @end
WHERE u.prefix = @prefix AND u.id = @id AND NOT (u.from_head AND s.final_seq IS NOT NULL)
ON CONFLICT DO NOTHING

-- name: update_subscribed
UPDATE herald_registration r
SET namespace = u.namespace, url = u.url, host = u.host, on_rejected = u.on_rejected,
    kinds = u.kinds, "window" = u."window", retain_max_ns = u.retain_max_ns, retry = u.retry,
    lease_owner = CASE WHEN @revoke::boolean THEN '' ELSE r.lease_owner END, -- as upsert_registration
    -- and, as there, one moved to another host drops what its old host held
    next_attempt_at = CASE WHEN r.host <> u.host AND r.host_failures > 0 THEN '0001-01-01 00:00:00+00' ELSE r.next_attempt_at END,
    host_failures = CASE WHEN r.host <> u.host THEN 0 ELSE r.host_failures END
FROM herald_subscription u WHERE u.prefix = @prefix AND u.id = @id AND r.subscription = @prefix AND r.id = @id
    AND r.subscription <> '' -- the partial index's, which a generic plan cannot prove of @prefix

-- name: mark_range
-- After the commit, the streams under the prefix are marked pending, so
-- that Due looks at them; one another transaction holds is being
-- numbered (the sequencer marks it) or cleared (it rereads the cursors).
UPDATE herald_stream SET pending = true WHERE stream IN (
    SELECT stream FROM herald_stream WHERE stream >= @prefix AND stream < @end AND NOT pending FOR NO KEY UPDATE SKIP LOCKED)

-- name: delete_subscription
DELETE FROM herald_subscription WHERE prefix = @prefix AND id = @id

-- name: unsubscribe
DELETE FROM herald_registration WHERE subscription = @prefix AND id = @id AND subscription <> '' -- as update_subscribed

-- name: subscriptions
-- @prefix and @id, '': every one. Each count reads the partial index (its
-- subscription <> '', as update_subscribed).
SELECT u.prefix, u.id, u.namespace, u.url, u.config, u.on_rejected, u.kinds, u."window", u.retain_max_ns, u.retry, u.from_head,
    (SELECT count(*)::int FROM herald_registration r WHERE r.subscription = u.prefix AND r.id = u.id AND r.subscription <> '')
FROM herald_subscription u WHERE (@prefix::text = '' OR u.prefix = @prefix) AND (@id::text = '' OR u.id = @id)
ORDER BY u.prefix, u.id
