package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/heraldpush/herald/store"
)

func scanToken(sc scanner) (store.Token, error) {
	var (
		t                      store.Token
		scope                  string
		created, used, revoked sql.NullInt64
	)
	if err := sc.Scan(&t.ID, &t.Hash, &t.Name, &t.Role, &scope, &created, &used, &revoked); err != nil {
		return t, err
	}
	t.Created, t.LastUsed, t.Revoked = instant(created), instant(used), instant(revoked)
	err := json.Unmarshal([]byte(scope), &t.Scope)
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
	created, err := instantArg("created", t.Created)
	if err != nil {
		return err
	}
	scope, _ := json.Marshal(append([]string{}, t.Scope...)) // strings marshal
	return s.write(ctx, "create token "+t.ID, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, stmt("create_token"), t.ID, t.Hash, t.Name, string(t.Role), string(scope), created)
		return translate("create token "+t.ID, err)
	})
}

// TokenByHash implements store.TokenStore.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	ts, err := queryAll(ctx, s.r, "read token", nil, scanToken, stmt("token_by_hash"), hash)
	return store.One(ts, err, store.ErrNoToken)
}

// Tokens implements store.TokenStore.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	return queryAll(ctx, s.r, "list tokens", []store.Token{}, scanToken, stmt("tokens"))
}

// RevokeToken implements store.TokenStore.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (store.Token, error) {
	n, err := instantArg("at", at)
	if err != nil {
		return store.Token{}, err
	}
	var ts []store.Token
	err = s.write(ctx, "revoke token "+id, func(tx *sql.Tx) error {
		ts, err = queryAll(ctx, tx, "revoke token "+id, nil, scanToken, stmt("revoke_token"), id, n)
		return err
	})
	return store.One(ts, err, store.TokenNotFound(id))
}

// TokenUsed implements store.TokenStore.
func (s *Store) TokenUsed(ctx context.Context, id string, at time.Time) error {
	n, err := nanos("at", at)
	if err != nil || !n.Valid {
		return err
	}
	return s.write(ctx, "record a token's use", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, stmt("token_used"), id, n)
		return translate("record a token's use", err)
	})
}
