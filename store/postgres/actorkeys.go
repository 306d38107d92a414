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

func scanActorKey(row pgx.CollectableRow, more ...any) (store.ActorKey, error) {
	var (
		k       store.ActorKey
		rotated pgtype.Timestamptz
	)
	err := row.Scan(append([]any{&k.ID, &k.Algorithm, &k.Fingerprint, &k.Version, &k.Created, &rotated}, more...)...)
	k.Created, k.Rotated = k.Created.UTC(), timeOf(rotated)
	return k, err
}

func scanPublicActorKey(row pgx.CollectableRow) (store.ActorKey, error) { return scanActorKey(row) }

// checkKeyText refuses what PostgreSQL's text cannot hold.
func checkKeyText(k store.ActorKey) error {
	if !validText(k.ID) || !validText(k.Algorithm) || !validText(k.Fingerprint) {
		return journal.Invalid("key_id", "holds a character PostgreSQL's text cannot (NUL)")
	}
	return nil
}

// AddActorKey implements store.ActorKeyStore.
func (s *Store) AddActorKey(ctx context.Context, k store.ActorKey) error {
	if err := store.ValidateActorKey(k); err != nil {
		return err
	}
	if err := checkKeyText(k); err != nil {
		return err
	}
	sealed, err := s.sealer.SealActorKey(k.ID, k.PrivateKey)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, stmt("add_actor_key"), pgx.NamedArgs{"id": k.ID, "private_key": sealed, "algorithm": k.Algorithm,
		"fingerprint": k.Fingerprint, "created_at": k.Created})
	return s.dbErr(ctx, fmt.Sprintf("add actor key %q", k.ID), err)
}

// RotateActorKey implements store.ActorKeyStore.
func (s *Store) RotateActorKey(ctx context.Context, k store.ActorKey, at time.Time) (store.ActorKey, error) {
	k.Created = at
	if err := store.ValidateActorKey(k); err != nil {
		return store.ActorKey{}, err
	}
	if err := checkKeyText(k); err != nil {
		return store.ActorKey{}, err
	}
	sealed, err := s.sealer.SealActorKey(k.ID, k.PrivateKey)
	if err != nil {
		return store.ActorKey{}, err
	}
	xs, err := query(ctx, s, "rotate actor key", nil, scanPublicActorKey, stmt("rotate_actor_key"), pgx.NamedArgs{"id": k.ID, "private_key": sealed,
		"algorithm": k.Algorithm, "fingerprint": k.Fingerprint, "at": at})
	return store.One(xs, err, store.ActorKeyNotFound(k.ID))
}

// ActorKey implements store.ActorKeyStore.
func (s *Store) ActorKey(ctx context.Context, id string) (store.ActorKey, error) {
	if !validText(id) {
		return store.ActorKey{}, store.ActorKeyNotFound(id)
	}
	var sealed []byte
	xs, err := query(ctx, s, "read actor key", nil, func(row pgx.CollectableRow) (store.ActorKey, error) { return scanActorKey(row, &sealed) }, stmt("actor_key"), pgx.NamedArgs{"id": id})
	k, err := store.One(xs, err, store.ActorKeyNotFound(id))
	if err != nil {
		return store.ActorKey{}, err
	}
	k.PrivateKey, err = s.sealer.OpenActorKey(id, sealed)
	return k, err
}

// ActorKeyVersion implements store.ActorKeyStore.
func (s *Store) ActorKeyVersion(ctx context.Context, id string) (int64, error) {
	if !validText(id) {
		return 0, store.ActorKeyNotFound(id)
	}
	xs, err := query(ctx, s, "read actor key version", nil, pgx.RowTo[int64], stmt("actor_key_version"), pgx.NamedArgs{"id": id})
	return store.One(xs, err, store.ActorKeyNotFound(id))
}

// ActorKeys implements store.ActorKeyStore.
func (s *Store) ActorKeys(ctx context.Context) ([]store.ActorKey, error) {
	return query(ctx, s, "list actor keys", []store.ActorKey{}, scanPublicActorKey, stmt("actor_keys"))
}

// RemoveActorKey implements store.ActorKeyStore.
func (s *Store) RemoveActorKey(ctx context.Context, id string) error {
	if !validText(id) {
		return store.ActorKeyNotFound(id)
	}
	tag, err := s.pool.Exec(ctx, stmt("remove_actor_key"), pgx.NamedArgs{"id": id})
	if err != nil {
		return s.dbErr(ctx, "remove actor key", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ActorKeyNotFound(id)
	}
	return nil
}

// ResealOthers implements store.Resealer: the actor keys and the
// subscriptions' configs, in one transaction.
func (s *Store) ResealOthers(ctx context.Context) (n int, err error) {
	scan := func(r pgx.CollectableRow) (x store.Sealed, err error) {
		err = r.Scan(&x.Prefix, &x.ID, &x.Stored)
		return x, err
	}
	err = s.inTx(ctx, "reseal actor keys and subscriptions", func(tx pgx.Tx) error {
		keys, err := txRows(ctx, tx, scan, stmt("reseal_read_actor_keys"))
		if err != nil {
			return s.dbErr(ctx, "reseal: read actor keys", err)
		}
		subs, err := txRows(ctx, tx, scan, stmt("reseal_read_subscriptions"))
		if err != nil {
			return s.dbErr(ctx, "reseal: read subscriptions", err)
		}
		n, err = s.sealer.ResealOthers(keys, subs, func(key bool, r store.Sealed, out []byte) error {
			op, q := "reseal subscription", stmt("reseal_subscription")
			if key {
				op, q = "reseal actor key", stmt("reseal_actor_key")
			}
			_, err := tx.Exec(ctx, q, pgx.NamedArgs{"stored": out, "prefix": r.Prefix, "id": r.ID})
			return s.dbErr(ctx, op, err)
		})
		return err
	})
	return n, err
}
