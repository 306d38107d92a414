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
