package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// actorKeys are the store's actor keys, by id, behind a mutex of their
// own. A memory store has no file to leak: keys are kept as given.
type actorKeys struct {
	mu   sync.Mutex
	byID map[string]store.ActorKey
}

func cloneActorKey(k store.ActorKey) store.ActorKey {
	k.PrivateKey = slices.Clone(k.PrivateKey)
	return k
}

// AddActorKey implements store.ActorKeyStore.
func (s *Store) AddActorKey(ctx context.Context, k store.ActorKey) error {
	if err := store.ValidateActorKey(k); err != nil {
		return err
	}
	ks := &s.actorKeys
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if _, ok := ks.byID[k.ID]; ok {
		return fmt.Errorf("actor key %q: %w", k.ID, journal.ErrConflict)
	}
	if ks.byID == nil {
		ks.byID = map[string]store.ActorKey{}
	}
	k = cloneActorKey(k)
	k.Version, k.Created, k.Rotated = 1, k.Created.UTC(), time.Time{}
	ks.byID[k.ID] = k
	return nil
}

// RotateActorKey implements store.ActorKeyStore.
func (s *Store) RotateActorKey(ctx context.Context, k store.ActorKey, at time.Time) (store.ActorKey, error) {
	if at.IsZero() {
		return store.ActorKey{}, journal.Invalid("at", "is zero: give the instant of the rotation")
	}
	ks := &s.actorKeys
	ks.mu.Lock()
	defer ks.mu.Unlock()
	old, ok := ks.byID[k.ID]
	if !ok {
		return store.ActorKey{}, fmt.Errorf("actor key %q: %w", k.ID, journal.ErrNotFound)
	}
	k.Created = old.Created
	if err := store.ValidateActorKey(k); err != nil {
		return store.ActorKey{}, err
	}
	k = cloneActorKey(k)
	k.Version, k.Rotated = old.Version+1, at.UTC()
	ks.byID[k.ID] = k
	k.PrivateKey = nil
	return k, nil
}

// ActorKey implements store.ActorKeyStore.
func (s *Store) ActorKey(ctx context.Context, id string) (store.ActorKey, error) {
	ks := &s.actorKeys
	ks.mu.Lock()
	defer ks.mu.Unlock()
	k, ok := ks.byID[id]
	if !ok {
		return store.ActorKey{}, fmt.Errorf("actor key %q: %w", id, journal.ErrNotFound)
	}
	return cloneActorKey(k), nil
}

// ActorKeyVersion implements store.ActorKeyStore.
func (s *Store) ActorKeyVersion(ctx context.Context, id string) (int64, error) {
	ks := &s.actorKeys
	ks.mu.Lock()
	defer ks.mu.Unlock()
	k, ok := ks.byID[id]
	if !ok {
		return 0, fmt.Errorf("actor key %q: %w", id, journal.ErrNotFound)
	}
	return k.Version, nil
}

// ActorKeys implements store.ActorKeyStore.
func (s *Store) ActorKeys(ctx context.Context) ([]store.ActorKey, error) {
	ks := &s.actorKeys
	ks.mu.Lock()
	defer ks.mu.Unlock()
	out := slices.SortedFunc(maps.Values(ks.byID), func(a, b store.ActorKey) int { return cmp.Compare(a.ID, b.ID) })
	for i := range out {
		out[i].PrivateKey = nil
	}
	return append([]store.ActorKey{}, out...), nil
}

// RemoveActorKey implements store.ActorKeyStore.
func (s *Store) RemoveActorKey(ctx context.Context, id string) error {
	ks := &s.actorKeys
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if _, ok := ks.byID[id]; !ok {
		return fmt.Errorf("actor key %q: %w", id, journal.ErrNotFound)
	}
	delete(ks.byID, id)
	return nil
}
