package operator

import (
	"cmp"
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
// sign with them, and returns the key to store and its signer. Errors wrap
// journal.ErrInvalid and name keyField or pemField.
func parseKey(keyField, pemField, id string, pem []byte) (store.ActorKey, crypto.Signer, error) {
	if err := activitypub.CheckKeyID(keyField, id); err != nil {
		return store.ActorKey{}, nil, err
	}
	p, err := activitypub.ParseKey(pemField, pem)
	if err != nil {
		return store.ActorKey{}, nil, err
	}
	return store.ActorKey{ID: id, PrivateKey: pem, Algorithm: p.Algorithm, Fingerprint: p.Fingerprint}, p.Signer, nil
}

// CheckKey refuses a key id or a PEM private key that AddKey and RotateKey
// would refuse before reading the store; errors as parseKey's.
func CheckKey(keyField, pemField, id string, pem []byte) error {
	_, _, err := parseKey(keyField, pemField, id, pem)
	return err
}

// KeyStore holds actors' keys and the registrations and subscriptions
// that sign with them.
type KeyStore interface {
	store.Store
	store.ActorKeyStore
	store.Subscriber
}

// AddKey parses and stores key id (herald keys add, POST /v1/keys).
// keyField and pemField name the flags or fields in errors. It is refused
// as RotateKey's key is when registrations already name id (a key removed
// with force and added again).
func AddKey(ctx context.Context, ks KeyStore, keyField, pemField, id string, pem []byte, at time.Time) (KeyView, error) {
	k, signer, err := parseKey(keyField, pemField, id, pem)
	if err == nil {
		err = checkSigners(ctx, ks, keyField, id, signer)
	}
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
// registration naming id signs with it from its next attempt. It is
// refused (journal.ErrConflict, naming them) while a registration or
// subscription naming id pins a scheme the key cannot sign with
// (activitypub.Schemes: draft-cavage and an Ed25519 key).
func RotateKey(ctx context.Context, ks KeyStore, keyField, pemField, id string, pem []byte, at time.Time) (KeyView, error) {
	k, signer, err := parseKey(keyField, pemField, id, pem)
	if err == nil {
		err = checkSigners(ctx, ks, keyField, id, signer)
	}
	if err == nil {
		k, err = ks.RotateActorKey(ctx, k, at)
	}
	if err != nil {
		return KeyView{}, err
	}
	return ViewKey(k), nil
}

// checkSigners refuses signer as held key id while a registration or
// subscription signing with id pins a scheme it cannot sign with, naming
// the first three.
func checkSigners(ctx context.Context, ks KeyStore, keyField, id string, signer crypto.Signer) error {
	var refused []string
	cannot := func(config []byte) bool {
		c := SigningKey(config)
		_, err := activitypub.Schemes(signer, c.Scheme)
		return c.KeyID == id && !c.Own && err != nil
	}
	regs, err := store.AllRegistrations(ctx, ks, store.ListQuery{Namespace: activitypub.Namespace})
	if err != nil {
		return err
	}
	for _, r := range regs {
		if cannot(r.Config) {
			refused = append(refused, "registration "+store.Name(r.Stream, r.ID))
		}
	}
	subs, err := ks.Subscriptions(ctx, "")
	if err != nil {
		return err
	}
	for _, sub := range subs {
		if sub.Namespace == activitypub.Namespace && cannot(sub.Config) {
			refused = append(refused, "subscription "+store.SubscriptionName(sub.Prefix, sub.ID))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	shown := strings.Join(refused[:min(3, len(refused))], ", ")
	if len(refused) > 3 {
		shown += fmt.Sprintf(" and %d more", len(refused)-3)
	}
	return fmt.Errorf("%s %q would sign for %d that pin draft-cavage, which an Ed25519 key cannot sign (%s): register them again with the rfc9421 scheme or none pinned first: %w",
		keyField, id, len(refused), shown, journal.ErrConflict)
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
		if c := SigningKey(r.Config); c.KeyID == id && !c.Own {
			n++
		}
	}
	return n, nil
}

// CheckHeldKey refuses (ErrForbidden) a scoped token's registration that
// signs with a key held once: held keys are every tenant's, and a tenant
// naming another's would have herald sign its own records as that actor.
// An update keeping the held key the registration signs with already (an
// admin's choice) passes. s is the store as tok sees it.
func CheckHeldKey(ctx context.Context, s store.Store, tok store.Token, reg store.Registration) error {
	k := SigningKey(reg.Config)
	if len(tok.Scope) == 0 || reg.Namespace != activitypub.Namespace || k.KeyID == "" || k.Own {
		return nil
	}
	old, err := s.Get(ctx, reg.Stream, reg.ID)
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		return err
	}
	if was := SigningKey(old.Config); err == nil && was.KeyID == k.KeyID && !was.Own {
		return nil
	}
	return fmt.Errorf("%w: config.key_id %s names a key held by herald keys, which every tenant shares: a token with a scope (%s) registers with its own config.private_key",
		ErrForbidden, journal.Quoted(k.KeyID), tok.ID)
}

// APKey is what an ActivityPub config says of the key it signs with.
type APKey struct {
	KeyID  string // key_id
	Own    bool   // it holds a private_key of its own, else it signs with the key held under KeyID
	Scheme string // signature_scheme: "rfc9421", "cavage", or "" (either, by the host's answer)
}

// SigningKey reads an ActivityPub config's key (the zero APKey for
// another config). It reads these three keys alone, not activitypub.Config,
// since a stored config's other values may be sealed.
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

// RemoveKey deletes held key id, refused (*KeyInUseError) while
// registrations sign with it, unless force: their deliveries then fail,
// retried, until the key is added again or they are re-registered.
// Errors: journal.ErrInvalid (id empty), journal.ErrNotFound, the store's.
func RemoveKey(ctx context.Context, b KeyStore, id string, force bool) (users int, err error) {
	if id == "" {
		return 0, journal.Invalid("key_id", "is empty: name the key to remove")
	}
	users, err = KeyUsers(ctx, b, id)
	if err != nil {
		return 0, err
	}
	if _, err := b.ActorKeyVersion(ctx, id); err != nil {
		return users, err
	}
	if users > 0 && !force {
		return users, &KeyInUseError{ID: id, Users: users}
	}
	return users, b.RemoveActorKey(ctx, id)
}

// KeyInUseError is RemoveKey's refusal of a key registrations sign with.
// It wraps journal.ErrConflict.
type KeyInUseError struct {
	ID    string
	Users int    // the registrations that sign with it
	Force string // how the caller says force (--force); "": "force"
}

func (e *KeyInUseError) Error() string {
	regs, them, their := fmt.Sprintf("%d registrations", e.Users), "them", "their"
	if e.Users == 1 {
		regs, them, their = "1 registration", "it", "its"
	}
	return fmt.Sprintf("key %q signs the deliveries of %s, so it was not removed: re-register %s with another key first, or remove it anyway with %s (%s deliveries then fail until the key is added again)",
		e.ID, regs, them, cmp.Or(e.Force, "force"), their)
}

func (e *KeyInUseError) Unwrap() error { return journal.ErrConflict }
