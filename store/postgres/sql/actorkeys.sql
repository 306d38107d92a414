-- Actor keys held once (actorkeys.go): the private key sealed
-- (store.Sealer.SealActorKey); a key's columns are what scanActorKey reads,
-- the private key last where a statement reads it.

{{define "actor_key"}}id, algorithm, fingerprint, version, created_at, rotated_at{{end}}

-- name: add_actor_key
INSERT INTO herald_actor_key (id, private_key, algorithm, fingerprint, version, created_at)
VALUES (@id, @private_key, @algorithm, @fingerprint, 1, @created_at)

-- name: rotate_actor_key
UPDATE herald_actor_key
SET private_key = @private_key, algorithm = @algorithm, fingerprint = @fingerprint, version = version + 1, rotated_at = @at
WHERE id = @id RETURNING {{template "actor_key"}}

-- name: actor_key
SELECT {{template "actor_key"}}, private_key FROM herald_actor_key WHERE id = @id

-- name: actor_key_version
SELECT version FROM herald_actor_key WHERE id = @id

-- name: actor_keys
SELECT {{template "actor_key"}} FROM herald_actor_key ORDER BY id

-- name: remove_actor_key
DELETE FROM herald_actor_key WHERE id = @id

-- name: reseal_read_actor_keys
-- Reseal (ResealOthers): every actor key, locked until the reseal commits.
SELECT '' AS prefix, id, private_key FROM herald_actor_key ORDER BY id FOR UPDATE

-- name: reseal_actor_key
UPDATE herald_actor_key SET private_key = @stored WHERE id = @id

-- name: reseal_read_subscriptions
-- Reseal (ResealOthers): every subscription's config, locked as above.
SELECT prefix, id, config FROM herald_subscription WHERE config IS NOT NULL ORDER BY prefix, id FOR UPDATE

-- name: reseal_subscription
UPDATE herald_subscription SET config = @stored WHERE prefix = @prefix AND id = @id
