package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// tokens are the store's tokens, by id, behind a mutex of their own: they
// share nothing with the journal.
type tokens struct {
	mu   sync.Mutex
	byID map[string]store.Token
}

func cloneToken(t store.Token) store.Token {
	t.Scope, t.Hash = slices.Clone(t.Scope), slices.Clone(t.Hash)
	return t
}

// CreateToken implements store.TokenStore.
func (s *Store) CreateToken(ctx context.Context, t store.Token) error {
	if err := store.ValidateToken(t); err != nil {
		return err
	}
	ts := &s.tokens
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.byID == nil {
		ts.byID = map[string]store.Token{}
	}
	for _, o := range ts.byID {
		if o.ID == t.ID || bytes.Equal(o.Hash, t.Hash) {
			return fmt.Errorf("token %q: %w: its id or secret is stored already", t.ID, journal.ErrConflict)
		}
	}
	ts.byID[t.ID] = cloneToken(t)
	return nil
}

// TokenByHash implements store.TokenStore.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	ts := &s.tokens
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.byID {
		if bytes.Equal(t.Hash, hash) {
			return cloneToken(t), nil
		}
	}
	return store.Token{}, fmt.Errorf("token: %w", journal.ErrNotFound)
}

// Tokens implements store.TokenStore.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	ts := &s.tokens
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := []store.Token{}
	for _, t := range ts.byID {
		out = append(out, cloneToken(t))
	}
	slices.SortFunc(out, func(a, b store.Token) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}

// RevokeToken implements store.TokenStore.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (store.Token, error) {
	if at.IsZero() {
		return store.Token{}, journal.Invalid("at", "is the zero time")
	}
	ts := &s.tokens
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.byID[id]
	if !ok {
		return store.Token{}, fmt.Errorf("token %q: %w", id, journal.ErrNotFound)
	}
	if t.Revoked.IsZero() {
		t.Revoked = at.UTC()
		ts.byID[id] = t
	}
	return cloneToken(t), nil
}

// TokenUsed implements store.TokenStore.
func (s *Store) TokenUsed(ctx context.Context, id string, at time.Time) error {
	ts := &s.tokens
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t, ok := ts.byID[id]; ok && at.After(t.LastUsed) {
		t.LastUsed = at.UTC()
		ts.byID[id] = t
	}
	return nil
}
