-- API tokens (tokens.go): stored hashed; a token's columns are what
-- scanToken reads.

{{define "token"}}id, hash, name, role, scope, created_at, last_used_at, revoked_at{{end}}

-- name: create_token
INSERT INTO herald_token ({{template "token"}})
VALUES (@id, @hash, @name, @role, @scope, @created_at, NULL, NULL)

-- name: token_by_hash
SELECT {{template "token"}} FROM herald_token WHERE hash = @hash

-- name: tokens
SELECT {{template "token"}} FROM herald_token ORDER BY created_at, id

-- name: revoke_token
UPDATE herald_token SET revoked_at = coalesce(revoked_at, @at) WHERE id = @id RETURNING {{template "token"}}

-- name: token_used
UPDATE herald_token SET last_used_at = @at WHERE id = @id AND (last_used_at IS NULL OR last_used_at < @at)
