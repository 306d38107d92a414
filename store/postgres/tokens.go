package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

const (
	tokenColumns   = "id, hash, name, role, scope, created_at, last_used_at, revoked_at"
	sqlCreateToken = "INSERT INTO herald_token (" + tokenColumns + ") VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL)"
	sqlTokenByHash = "SELECT " + tokenColumns + " FROM herald_token WHERE hash = $1"
	sqlTokens      = "SELECT " + tokenColumns + " FROM herald_token ORDER BY created_at, id"
	sqlRevokeToken = "UPDATE herald_token SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1 RETURNING " + tokenColumns
	sqlTokenUsed   = "UPDATE herald_token SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)"
)

func scanToken(row pgx.CollectableRow) (store.Token, error) {
	var (
		t             store.Token
		used, revoked pgtype.Timestamptz
	)
	err := row.Scan(&t.ID, &t.Hash, &t.Name, &t.Role, &t.Scope, &t.Created, &used, &revoked)
	t.Created, t.LastUsed, t.Revoked = t.Created.UTC(), timeOf(used), timeOf(revoked)
	if len(t.Scope) == 0 {
		t.Scope = nil
	}
	return t, err
}

// CreateToken implements store.TokenStore.
func (s *Store) CreateToken(ctx context.Context, t store.Token) error {
	if err := store.ValidateToken(t); err != nil {
		return err
	}
	if !validText(t.ID) || !validText(t.Name) {
		return journal.Invalid("name", "holds a character PostgreSQL's text cannot (NUL)")
	}
	scope := t.Scope
	if scope == nil {
		scope = []string{}
	}
	_, err := s.pool.Exec(ctx, sqlCreateToken, t.ID, t.Hash, t.Name, string(t.Role), scope, t.Created)
	return s.dbErr(ctx, "create token "+t.ID, err)
}

// TokenByHash implements store.TokenStore.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	ts, err := query(ctx, s, "read token", nil, scanToken, sqlTokenByHash, hash)
	if err == nil && len(ts) == 0 {
		err = fmt.Errorf("token: %w", journal.ErrNotFound)
	}
	if err != nil {
		return store.Token{}, err
	}
	return ts[0], nil
}

// Tokens implements store.TokenStore.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	return query(ctx, s, "list tokens", []store.Token{}, scanToken, sqlTokens)
}

// RevokeToken implements store.TokenStore.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (store.Token, error) {
	if at.IsZero() {
		return store.Token{}, journal.Invalid("at", "is the zero time")
	}
	var ts []store.Token
	var err error
	if validText(id) {
		ts, err = query(ctx, s, "revoke token", nil, scanToken, sqlRevokeToken, id, at)
	}
	if err == nil && len(ts) == 0 {
		err = fmt.Errorf("token %q: %w", id, journal.ErrNotFound)
	}
	if err != nil {
		return store.Token{}, err
	}
	return ts[0], nil
}

// TokenUsed implements store.TokenStore.
func (s *Store) TokenUsed(ctx context.Context, id string, at time.Time) error {
	if !validText(id) || at.IsZero() {
		return nil
	}
	_, err := s.pool.Exec(ctx, sqlTokenUsed, id, at)
	return s.dbErr(ctx, "record a token's use", err)
}
