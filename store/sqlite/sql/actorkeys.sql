-- Actor keys (actorkeys.go).

-- name: add_actor_key
INSERT INTO herald_actor_key (id, private_key, algorithm, fingerprint, version, created_at) VALUES (?, ?, ?, ?, 1, ?)

-- name: rotate_actor_key
UPDATE herald_actor_key SET private_key = ?2, algorithm = ?3, fingerprint = ?4, version = version + 1, rotated_at = ?5 WHERE id = ?1 RETURNING {{template "actor_key_columns"}}

-- name: actor_key
SELECT {{template "actor_key_columns"}}, private_key FROM herald_actor_key WHERE id = ?

-- name: actor_key_version
SELECT version FROM herald_actor_key WHERE id = ?

-- name: actor_keys
SELECT {{template "actor_key_columns"}} FROM herald_actor_key ORDER BY id

-- name: remove_actor_key
DELETE FROM herald_actor_key WHERE id = ?

-- name: reseal_read_actor_keys
-- Reseal (ResealOthers): every actor key.
SELECT '', id, private_key FROM herald_actor_key

-- name: reseal_actor_key
-- ?1 the key sealed anew, ?3 its id (?2, a subscription's prefix, unused).
UPDATE herald_actor_key SET private_key = ?1 WHERE id = ?3

-- name: reseal_read_subscriptions
-- Reseal (ResealOthers): every subscription's config.
SELECT prefix, id, config FROM herald_subscription WHERE config IS NOT NULL

-- name: reseal_subscription
UPDATE herald_subscription SET config = ?1 WHERE prefix = ?2 AND id = ?3

-- name: any_sealed
-- SealedKeyID: one sealed value (?1 seal.Prefix), of any table that holds them.
SELECT config FROM herald_registration WHERE substr(config, 1, length(?1)) = ?1
UNION ALL SELECT private_key FROM herald_actor_key WHERE substr(private_key, 1, length(?1)) = ?1
UNION ALL SELECT config FROM herald_subscription WHERE substr(config, 1, length(?1)) = ?1
LIMIT 1
