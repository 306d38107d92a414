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

// KeyStore holds actors' keys and the registrations that sign with them.
type KeyStore interface {
	store.Store
	store.ActorKeyStore
}

// AddKey parses and stores key id (herald keys add, POST /v1/keys).
// keyField and pemField name the flags or fields in errors.
func AddKey(ctx context.Context, ks KeyStore, keyField, pemField, id string, pem []byte, at time.Time) (KeyView, error) {
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
// registration naming id signs with it from its next attempt. An Ed25519
// key signs RFC 9421 only, so it is refused (journal.ErrConflict, naming
// how many) while a registration signing with id is pinned to draft-cavage.
func RotateKey(ctx context.Context, ks KeyStore, keyField, pemField, id string, pem []byte, at time.Time) (KeyView, error) {
	k, err := parseKey(keyField, pemField, id, pem)
	if err != nil {
		return KeyView{}, err
	}
	if k.Algorithm == "Ed25519" {
		pinned, err := keyUsers(ctx, ks, id, func(scheme string) bool { return scheme == "cavage" })
		if err != nil {
			return KeyView{}, err
		}
		if pinned > 0 {
			return KeyView{}, fmt.Errorf("%s %q signs the deliveries of %d registration(s) pinned to draft-cavage, which an Ed25519 key cannot sign: re-register them with rfc9421 or no pinned scheme first: %w", keyField, id, pinned, journal.ErrConflict)
		}
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
	return keyUsers(ctx, s, id, func(string) bool { return true })
}

// keyUsers counts those of KeyUsers whose signature scheme (pinned, or "")
// is one that counts.
func keyUsers(ctx context.Context, s store.Store, id string, counts func(scheme string) bool) (int, error) {
	regs, err := store.AllRegistrations(ctx, s, store.ListQuery{Namespace: activitypub.Namespace})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range regs {
		if c := SigningKey(r.Config); c.KeyID == id && !c.Own && counts(c.Scheme) {
			n++
		}
	}
	return n, nil
}

// APKey is what an ActivityPub config says of the key it signs with.
type APKey struct {
	KeyID  string // key_id
	Own    bool   // it holds a private_key of its own, else it signs with the key held under KeyID
	Scheme string // signature_scheme: "rfc9421", "cavage", or "" (either, by the host's answer)
}

// SigningKey reads an ActivityPub config's key (the zero APKey for
// another config).
func SigningKey(config []byte) APKey {
	var c struct {
		KeyID      string `json:"key_id"`
		PrivateKey string `json:"private_key"`
		Scheme     string `json:"signature_scheme"`
	}
	if json.Unmarshal(config, &c) != nil {
		return APKey{}
	}
	return APKey{KeyID: c.KeyID, Own: c.PrivateKey != "", Scheme: c.Scheme}
}

// RemoveKey deletes held key id, refused (journal.ErrConflict, naming how
// many) while registrations sign with it, unless force: their deliveries
// then fail, retried, until the key is added again or they are
// re-registered.
func RemoveKey(ctx context.Context, b KeyStore, id string, force bool) (users int, err error) {
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
