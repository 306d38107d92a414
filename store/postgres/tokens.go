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

// sql/tokens.sql.
var (
	sqlCreateToken = stmt("create_token")
	sqlTokenByHash = stmt("token_by_hash")
	sqlTokens      = stmt("tokens")
	sqlRevokeToken = stmt("revoke_token")
	sqlTokenUsed   = stmt("token_used")
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
	_, err := s.pool.Exec(ctx, sqlCreateToken, pgx.NamedArgs{"id": t.ID, "hash": t.Hash, "name": t.Name, "role": string(t.Role),
		"scope": scope, "created_at": t.Created})
	return s.dbErr(ctx, "create token "+t.ID, err)
}

// TokenByHash implements store.TokenStore.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	ts, err := query(ctx, s, "read token", nil, scanToken, sqlTokenByHash, pgx.NamedArgs{"hash": hash})
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
		ts, err = query(ctx, s, "revoke token", nil, scanToken, sqlRevokeToken, pgx.NamedArgs{"id": id, "at": at})
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
	_, err := s.pool.Exec(ctx, sqlTokenUsed, pgx.NamedArgs{"id": id, "at": at})
	return s.dbErr(ctx, "record a token's use", err)
}
