package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/store"
)

// KeyView is what the CLI, the API and the page show of an actor key held
// once (store.ActorKey): never its private key.
type KeyView struct {
	ID          string    `json:"key_id"`
	Algorithm   string    `json:"algorithm"`
	Fingerprint string    `json:"fingerprint"`
	Version     int64     `json:"version"`
	Created     time.Time `json:"created_at"`
	Rotated     time.Time `json:"rotated_at,omitzero"`
}

// ViewKey is k as shown.
func ViewKey(k store.ActorKey) KeyView {
	return KeyView{ID: k.ID, Algorithm: k.Algorithm, Fingerprint: k.Fingerprint, Version: k.Version, Created: k.Created, Rotated: k.Rotated}
}

// Keys lists every key held, as shown. Errors are ks's.
func Keys(ctx context.Context, ks store.ActorKeyStore) ([]KeyView, error) {
	keys, err := ks.ActorKeys(ctx)
	out := make([]KeyView, len(keys))
	for i, k := range keys {
		out[i] = ViewKey(k)
	}
	return out, err
}

// parseKey checks a key id and a PEM private key as a registration would
// sign with them. Errors wrap journal.ErrInvalid and name keyField or
// pemField.
func parseKey(keyField, pemField, id string, pem []byte) (store.ActorKey, error) {
	if err := activitypub.CheckKeyID(keyField, id); err != nil {
		return store.ActorKey{}, err
	}
	p, err := activitypub.ParseKey(pemField, pem)
	if err != nil {
		return store.ActorKey{}, err
	}
	return store.ActorKey{ID: id, PrivateKey: pem, Algorithm: p.Algorithm, Fingerprint: p.Fingerprint}, nil
}

// AddKey parses and stores key id (herald keys add, POST /v1/keys).
// keyField and pemField name the flags or fields in errors.
func AddKey(ctx context.Context, ks store.ActorKeyStore, keyField, pemField, id string, pem []byte, at time.Time) (KeyView, error) {
	k, err := parseKey(keyField, pemField, id, pem)
	if err != nil {
		return KeyView{}, err
	}
	k.Created, k.Version = at.UTC(), 1
	if err := ks.AddActorKey(ctx, k); errors.Is(err, journal.ErrConflict) {
		return KeyView{}, fmt.Errorf("%s %q is held already: rotate replaces its key (herald keys rotate): %w", keyField, id, journal.ErrConflict)
	} else if err != nil {
		return KeyView{}, err
	}
	return ViewKey(k), nil
}

// RotateKey parses pem and makes it key id's (herald keys rotate): every
// registration naming id signs with it from its next attempt.
func RotateKey(ctx context.Context, ks store.ActorKeyStore, keyField, pemField, id string, pem []byte, at time.Time) (KeyView, error) {
	k, err := parseKey(keyField, pemField, id, pem)
	if err != nil {
		return KeyView{}, err
	}
	k, err = ks.RotateActorKey(ctx, k, at)
	if err != nil {
		return KeyView{}, err
	}
	return ViewKey(k), nil
}

// RemovedKey answers a key's removal.
type RemovedKey struct {
	ID            string `json:"key_id"`
	Registrations int    `json:"registrations"` // that named it (removed with force)
}

// KeyUsers counts the ActivityPub registrations that sign with held key
// id: key_id id and no private_key of their own.
func KeyUsers(ctx context.Context, s store.Store, id string) (int, error) {
	regs, err := store.AllRegistrations(ctx, s, store.ListQuery{Namespace: activitypub.Namespace})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range regs {
		if keyID, own := SigningKey(r.Config); keyID == id && !own {
			n++
		}
	}
	return n, nil
}

// SigningKey reads an ActivityPub config's key_id, and whether it holds a
// private_key of its own (else it signs with the key held under key_id).
func SigningKey(config []byte) (keyID string, own bool) {
	var c struct {
		KeyID      string `json:"key_id"`
		PrivateKey string `json:"private_key"`
	}
	if json.Unmarshal(config, &c) != nil {
		return "", false
	}
	return c.KeyID, c.PrivateKey != ""
}

// RemoveKey deletes held key id, refused (journal.ErrConflict, naming how
// many) while registrations sign with it, unless force: their deliveries
// then fail, retried, until the key is added again or they are
// re-registered.
func RemoveKey(ctx context.Context, b interface {
	store.Store
	store.ActorKeyStore
}, id string, force bool) (users int, err error) {
	users, err = KeyUsers(ctx, b, id)
	if err != nil {
		return 0, err
	}
	if _, err := b.ActorKeyVersion(ctx, id); err != nil {
		return users, err
	}
	if users > 0 && !force {
		return users, fmt.Errorf("key %q signs the deliveries of %d registration(s): re-register them with another key, or remove it with force (their deliveries then fail until it is added again): %w", id, users, journal.ErrConflict)
	}
	return users, b.RemoveActorKey(ctx, id)
}
