-- API tokens (tokens.go).

-- name: create_token
INSERT INTO herald_token ({{template "token_columns"}}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)

-- name: token_by_hash
SELECT {{template "token_columns"}} FROM herald_token WHERE hash = ?

-- name: tokens
SELECT {{template "token_columns"}} FROM herald_token ORDER BY created_at, id

-- name: revoke_token
UPDATE herald_token SET revoked_at = coalesce(revoked_at, ?2) WHERE id = ?1 RETURNING {{template "token_columns"}}

-- name: token_used
UPDATE herald_token SET last_used_at = ?2 WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at < ?2)
