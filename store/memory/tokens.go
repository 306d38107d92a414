package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

func cloneToken(t store.Token) store.Token {
	t.Scope, t.Hash = slices.Clone(t.Scope), slices.Clone(t.Hash)
	return t
}

// CreateToken implements store.TokenStore.
func (s *Store) CreateToken(ctx context.Context, t store.Token) error {
	if err := store.ValidateToken(t); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.tokens {
		if o.ID == t.ID || bytes.Equal(o.Hash, t.Hash) {
			return fmt.Errorf("token %q: %w: its id or secret is stored already", t.ID, journal.ErrConflict)
		}
	}
	s.tokens[t.ID] = cloneToken(t)
	return nil
}

// TokenByHash implements store.TokenStore.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		if bytes.Equal(t.Hash, hash) {
			return cloneToken(t), nil
		}
	}
	return store.Token{}, store.ErrNoToken
}

// Tokens implements store.TokenStore.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []store.Token{}
	for _, t := range s.tokens {
		out = append(out, cloneToken(t))
	}
	slices.SortFunc(out, func(a, b store.Token) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}

// RevokeToken implements store.TokenStore.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (store.Token, error) {
	if err := store.ValidateInstant("at", at); err != nil {
		return store.Token{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[id]
	if !ok {
		return store.Token{}, store.TokenNotFound(id)
	}
	if t.Revoked.IsZero() {
		t.Revoked = at.UTC()
		s.tokens[id] = t
	}
	return cloneToken(t), nil
}

// TokenUsed implements store.TokenStore.
func (s *Store) TokenUsed(ctx context.Context, id string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[id]; ok && at.After(t.LastUsed) {
		t.LastUsed = at.UTC()
		s.tokens[id] = t
	}
	return nil
}
