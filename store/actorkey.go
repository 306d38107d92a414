package store

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/seal"
)

// ActorKey is an actor's signing key, held once by its key id and named by
// the registrations that sign with it (an ActivityPub registration's
// key_id). PrivateKey is the PEM text: a SQL store keeps it sealed
// (Sealer.SealActorKey), and ActorKeys never returns it. Algorithm and
// Fingerprint are what the caller parsed from it (the store does not parse
// keys). Version is 1 when added and grows by one at each rotation, so that
// a parsed key cached by (ID, Version) is never used after a rotation.
type ActorKey struct {
	ID          string    `json:"key_id"`
	PrivateKey  []byte    `json:"-"`
	Algorithm   string    `json:"algorithm"`   // "RSA" or "Ed25519"
	Fingerprint string    `json:"fingerprint"` // "SHA256:" and the unpadded base64 of the public key's SHA-256 (PKIX DER)
	Version     int64     `json:"version"`
	Created     time.Time `json:"created_at"`
	Rotated     time.Time `json:"rotated_at,omitzero"` // the last rotation; zero: never
}

// MaxActorKeyID is the longest key id, in bytes.
const MaxActorKeyID = 2048

// ValidateActorKey checks a key before a store adds or rotates it: an id
// (journal.ValidateText, at most MaxActorKeyID bytes), a private key, an
// algorithm and a fingerprint, and a creation instant. Errors name the
// field and wrap journal.ErrInvalid.
func ValidateActorKey(k ActorKey) error {
	if err := journal.ValidateText("key_id", k.ID, MaxActorKeyID); err != nil {
		return err
	}
	switch {
	case len(k.PrivateKey) == 0:
		return journal.Invalid("private_key", "is required")
	case k.Algorithm == "":
		return journal.Invalid("algorithm", "is required")
	case k.Fingerprint == "":
		return journal.Invalid("fingerprint", "is required")
	case k.Created.IsZero():
		return journal.Invalid("created", "is zero: give the instant the key was added")
	}
	return nil
}

// ActorKeyStore keeps actors' signing keys by key id. Every store
// implements it.
type ActorKeyStore interface {
	// AddActorKey stores k at Version 1, after ValidateActorKey. Errors:
	// journal.ErrInvalid, journal.ErrConflict (its id is stored already),
	// ErrNoKeyring (a store that seals has no keyring).
	AddActorKey(ctx context.Context, k ActorKey) error
	// RotateActorKey replaces key k.ID's PrivateKey, Algorithm and
	// Fingerprint, sets Rotated to at and adds one to Version, and returns
	// it without its private key. Errors: journal.ErrInvalid,
	// journal.ErrNotFound.
	RotateActorKey(ctx context.Context, k ActorKey, at time.Time) (ActorKey, error)
	// ActorKey returns key id with its private key (opened). Errors:
	// journal.ErrNotFound.
	ActorKey(ctx context.Context, id string) (ActorKey, error)
	// ActorKeyVersion returns key id's Version, reading no private key:
	// what a signer checks before each message. Errors: journal.ErrNotFound.
	ActorKeyVersion(ctx context.Context, id string) (int64, error)
	// ActorKeys returns every key without its private key, by id.
	ActorKeys(ctx context.Context) ([]ActorKey, error)
	// RemoveActorKey deletes key id. Errors: journal.ErrNotFound.
	RemoveActorKey(ctx context.Context, id string) error
}

// ActorKeyNotFound is the error of key id that no store holds, as every
// ActorKeyStore says it.
func ActorKeyNotFound(id string) error {
	return fmt.Errorf("actor key %s: %w", journal.Quoted(id), journal.ErrNotFound)
}

// actorKeyAD binds a sealed private key to its key id.
func actorKeyAD(id string) []byte { return seal.AD("herald actor key", id) }

// SealActorKey returns what a store keeps of key id's private key pem: it
// sealed with a keyring; without one pem as given, unless Required
// (ErrNoKeyring: a private key is always a secret).
func (s Sealer) SealActorKey(id string, pem []byte) ([]byte, error) {
	switch {
	case s.Keyring != nil:
		return s.Keyring.Seal(pem, actorKeyAD(id)), nil
	case s.Required:
		return nil, fmt.Errorf("add actor key %s: %w", journal.Quoted(id), ErrNoKeyring)
	}
	return pem, nil
}

// OpenActorKey returns the private key SealActorKey kept for key id.
func (s Sealer) OpenActorKey(id string, stored []byte) ([]byte, error) {
	if !seal.IsSealed(stored) {
		return stored, nil
	}
	if s.Keyring == nil {
		return nil, fmt.Errorf("open actor key %s: %w", journal.Quoted(id), ErrNoKeyring)
	}
	pem, err := s.Keyring.Open(stored, actorKeyAD(id))
	if err != nil {
		return nil, fmt.Errorf("open actor key %s: %w", journal.Quoted(id), err)
	}
	return pem, nil
}
