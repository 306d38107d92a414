package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

func cloneActorKey(k store.ActorKey) store.ActorKey {
	k.PrivateKey = slices.Clone(k.PrivateKey)
	return k
}

// AddActorKey implements store.ActorKeyStore.
func (s *Store) AddActorKey(ctx context.Context, k store.ActorKey) error {
	if err := store.ValidateActorKey(k); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.actorKeys[k.ID]; ok {
		return fmt.Errorf("actor key %q: %w", k.ID, journal.ErrConflict)
	}
	k = cloneActorKey(k)
	k.Version, k.Created, k.Rotated = 1, k.Created.UTC(), time.Time{}
	s.actorKeys[k.ID] = k
	return nil
}

// RotateActorKey implements store.ActorKeyStore.
func (s *Store) RotateActorKey(ctx context.Context, k store.ActorKey, at time.Time) (store.ActorKey, error) {
	if at.IsZero() {
		return store.ActorKey{}, journal.Invalid("at", "is zero: give the instant of the rotation")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.actorKeys[k.ID]
	if !ok {
		return store.ActorKey{}, store.ActorKeyNotFound(k.ID)
	}
	k.Created = old.Created
	if err := store.ValidateActorKey(k); err != nil {
		return store.ActorKey{}, err
	}
	k = cloneActorKey(k)
	k.Version, k.Rotated = old.Version+1, at.UTC()
	s.actorKeys[k.ID] = k
	k.PrivateKey = nil
	return k, nil
}

// ActorKey implements store.ActorKeyStore.
func (s *Store) ActorKey(ctx context.Context, id string) (store.ActorKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.actorKeys[id]
	if !ok {
		return store.ActorKey{}, store.ActorKeyNotFound(id)
	}
	return cloneActorKey(k), nil
}

// ActorKeyVersion implements store.ActorKeyStore.
func (s *Store) ActorKeyVersion(ctx context.Context, id string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.actorKeys[id]
	if !ok {
		return 0, store.ActorKeyNotFound(id)
	}
	return k.Version, nil
}

// ActorKeys implements store.ActorKeyStore.
func (s *Store) ActorKeys(ctx context.Context) ([]store.ActorKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.SortedFunc(maps.Values(s.actorKeys), func(a, b store.ActorKey) int { return cmp.Compare(a.ID, b.ID) })
	for i := range out {
		out[i].PrivateKey = nil
	}
	return append([]store.ActorKey{}, out...), nil
}

// RemoveActorKey implements store.ActorKeyStore.
func (s *Store) RemoveActorKey(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.actorKeys[id]; !ok {
		return store.ActorKeyNotFound(id)
	}
	delete(s.actorKeys, id)
	return nil
}
