package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/heraldpush/herald/store"
)

func scanActorKey(sc scanner, more ...any) (store.ActorKey, error) {
	var (
		k                store.ActorKey
		created, rotated sql.NullInt64
	)
	err := sc.Scan(append([]any{&k.ID, &k.Algorithm, &k.Fingerprint, &k.Version, &created, &rotated}, more...)...)
	k.Created, k.Rotated = instant(created), instant(rotated)
	return k, err
}

func scanPublicActorKey(sc scanner) (store.ActorKey, error) { return scanActorKey(sc) }

// AddActorKey implements store.ActorKeyStore.
func (s *Store) AddActorKey(ctx context.Context, k store.ActorKey) error {
	if err := store.ValidateActorKey(k); err != nil {
		return err
	}
	created, err := instantArg("created", k.Created)
	if err != nil {
		return err
	}
	sealed, err := s.sealer.SealActorKey(k.ID, k.PrivateKey)
	if err != nil {
		return err
	}
	return s.write(ctx, "add actor key", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, stmt("add_actor_key"), k.ID, sealed, k.Algorithm, k.Fingerprint, created)
		return translate(fmt.Sprintf("add actor key %q", k.ID), err)
	})
}

// RotateActorKey implements store.ActorKeyStore.
func (s *Store) RotateActorKey(ctx context.Context, k store.ActorKey, at time.Time) (store.ActorKey, error) {
	k.Created = at
	if err := store.ValidateActorKey(k); err != nil {
		return store.ActorKey{}, err
	}
	n, err := instantArg("at", at)
	if err != nil {
		return store.ActorKey{}, err
	}
	sealed, err := s.sealer.SealActorKey(k.ID, k.PrivateKey)
	if err != nil {
		return store.ActorKey{}, err
	}
	var ks []store.ActorKey
	err = s.write(ctx, "rotate actor key", func(tx *sql.Tx) error {
		ks, err = queryAll(ctx, tx, "rotate actor key", nil, scanPublicActorKey, stmt("rotate_actor_key"), k.ID, sealed, k.Algorithm, k.Fingerprint, n)
		return err
	})
	return store.One(ks, err, store.ActorKeyNotFound(k.ID))
}

// ActorKey implements store.ActorKeyStore.
func (s *Store) ActorKey(ctx context.Context, id string) (store.ActorKey, error) {
	var sealed []byte
	ks, err := queryAll(ctx, s.r, "read actor key", nil, func(sc scanner) (store.ActorKey, error) { return scanActorKey(sc, &sealed) }, stmt("actor_key"), id)
	k, err := store.One(ks, err, store.ActorKeyNotFound(id))
	if err != nil {
		return store.ActorKey{}, err
	}
	k.PrivateKey, err = s.sealer.OpenActorKey(id, sealed)
	return k, err
}

// ActorKeyVersion implements store.ActorKeyStore.
func (s *Store) ActorKeyVersion(ctx context.Context, id string) (int64, error) {
	vs, err := queryAll(ctx, s.r, "read actor key version", nil, func(sc scanner) (int64, error) {
		var v int64
		return v, sc.Scan(&v)
	}, stmt("actor_key_version"), id)
	return store.One(vs, err, store.ActorKeyNotFound(id))
}

// ActorKeys implements store.ActorKeyStore.
func (s *Store) ActorKeys(ctx context.Context) ([]store.ActorKey, error) {
	return queryAll(ctx, s.r, "list actor keys", []store.ActorKey{}, scanPublicActorKey, stmt("actor_keys"))
}

// RemoveActorKey implements store.ActorKeyStore.
func (s *Store) RemoveActorKey(ctx context.Context, id string) error {
	return s.write(ctx, "remove actor key", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, stmt("remove_actor_key"), id)
		if err != nil {
			return translate("remove actor key", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ActorKeyNotFound(id)
		}
		return nil
	})
}
