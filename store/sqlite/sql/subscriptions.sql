-- Subscriptions (subscriptions.go).

-- name: upsert_subscription
INSERT INTO herald_subscription
			(prefix, id, namespace, url, host, config, on_rejected, kinds, "window", retain_max_ns, retry, from_head)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (prefix, id) DO UPDATE SET namespace = excluded.namespace, url = excluded.url, host = excluded.host,
			config = excluded.config, on_rejected = excluded.on_rejected, kinds = excluded.kinds, "window" = excluded."window",
			retain_max_ns = excluded.retain_max_ns, retry = excluded.retry

-- name: materialise
-- ?1 prefix, ?2 id, ?3 store.PrefixEnd: the streams under the prefix are
-- an index range.
INSERT INTO herald_registration (stream, id, namespace, url, host, on_rejected, kinds, "window",
				retain_max_ns, retry, subscription, next_seq)
			SELECT s.stream, u.id, u.namespace, u.url, u.host, u.on_rejected, u.kinds, u."window",
				u.retain_max_ns, u.retry, u.prefix, CASE WHEN u.from_head THEN s.head + 1 ELSE s.oldest_seq END
			FROM herald_subscription AS u JOIN herald_stream AS s ON s.stream >= ?1 AND s.stream < ?3
			WHERE u.prefix = ?1 AND u.id = ?2 AND NOT (u.from_head AND s.sealed)
			ON CONFLICT DO NOTHING

-- name: update_subscribed
-- As update_registration: when ?3, a turn in flight loses its lease (Store.Register).
-- One moved to another host drops what its old host held, as there (wake_range wakes it).
-- subscription <> '', as the partial index herald_registration_subscription
-- says it, lets the planner read that index (it cannot prove it of ?1).
UPDATE herald_registration SET lease_owner = CASE WHEN ?3 THEN '' ELSE lease_owner END,
			next_attempt_at = CASE WHEN host <> (SELECT host FROM herald_subscription WHERE prefix = ?1 AND id = ?2) AND host_failures > 0
				THEN NULL ELSE next_attempt_at END,
			host_failures = CASE WHEN host <> (SELECT host FROM herald_subscription WHERE prefix = ?1 AND id = ?2) THEN 0 ELSE host_failures END,
			(namespace, url, host, on_rejected, kinds, "window", retain_max_ns, retry) =
			(SELECT namespace, url, host, on_rejected, kinds, "window", retain_max_ns, retry FROM herald_subscription WHERE prefix = ?1 AND id = ?2)
			WHERE subscription = ?1 AND id = ?2 AND subscription <> ''

-- name: wake_range
UPDATE herald_stream SET wake_at = MIN(IFNULL(wake_at, ?3), ?3) WHERE stream >= ?1 AND stream < ?2

-- name: delete_subscription
DELETE FROM herald_subscription WHERE prefix = ? AND id = ? RETURNING 1

-- name: unsubscribe
DELETE FROM herald_registration WHERE subscription = ? AND id = ? AND subscription <> '' -- the index's, as update_subscribed

-- name: subscriptions
-- ?1 the prefix, ?2 the id; '': every one. Each count reads the index (the
-- partial index's subscription <> '', as update_subscribed).
SELECT u.prefix, u.id, u.namespace, u.url, u.config, u.on_rejected, u.kinds, u."window", u.retain_max_ns, u.retry, u.from_head,
			(SELECT COUNT(*) FROM herald_registration AS r WHERE r.subscription = u.prefix AND r.id = u.id AND r.subscription <> '')
		FROM herald_subscription AS u WHERE (?1 = '' OR u.prefix = ?1) AND (?2 = '' OR u.id = ?2) ORDER BY u.prefix, u.id
