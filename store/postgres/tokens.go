package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
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
	_, err := s.pool.Exec(ctx, stmt("create_token"), pgx.NamedArgs{"id": t.ID, "hash": t.Hash, "name": t.Name, "role": string(t.Role),
		"scope": scope, "created_at": t.Created})
	return s.dbErr(ctx, "create token "+t.ID, err)
}

// TokenByHash implements store.TokenStore.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	xs, err := query(ctx, s, "read token", nil, scanToken, stmt("token_by_hash"), pgx.NamedArgs{"hash": hash})
	return store.One(xs, err, store.ErrNoToken)
}

// Tokens implements store.TokenStore.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	return query(ctx, s, "list tokens", []store.Token{}, scanToken, stmt("tokens"))
}

// RevokeToken implements store.TokenStore.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (store.Token, error) {
	if err := store.ValidateInstant("at", at); err != nil {
		return store.Token{}, err
	}
	var ts []store.Token
	var err error
	if validText(id) {
		ts, err = query(ctx, s, "revoke token", nil, scanToken, stmt("revoke_token"), pgx.NamedArgs{"id": id, "at": at})
	}
	return store.One(ts, err, store.TokenNotFound(id))
}

// TokenUsed implements store.TokenStore.
func (s *Store) TokenUsed(ctx context.Context, id string, at time.Time) error {
	if !validText(id) || at.IsZero() {
		return nil
	}
	_, err := s.pool.Exec(ctx, stmt("token_used"), pgx.NamedArgs{"id": id, "at": at})
	return s.dbErr(ctx, "record a token's use", err)
}
