package activitypub

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// KeySource holds actors' keys once, by key id (package doc, "Keys held
// once"): store.ActorKeyStore, which every herald store implements.
type KeySource interface {
	ActorKey(ctx context.Context, id string) (store.ActorKey, error)
	ActorKeyVersion(ctx context.Context, id string) (int64, error)
}

// Option configures New.
type Option func(*Projection)

// WithKeys gives the projection the key store that registrations naming a
// key id only (no private_key) sign with. Without it such a registration
// is refused (ValidateConfig) and its messages fail.
func WithKeys(src KeySource) Option { return func(p *Projection) { p.keys = src } }

// ParsedKey is what ParseKey reads from a PEM private key: the key, its
// algorithm ("RSA" or "Ed25519") and the fingerprint of its public half.
type ParsedKey struct {
	Signer      crypto.Signer
	Algorithm   string
	Fingerprint string
}

// ParseKey reads an actor's private key as registrations' private_key
// accepts it (Config), for `herald keys add` and rotate. Errors wrap
// journal.ErrInvalid, name field, and never show the key.
func ParseKey(field string, pemText []byte) (ParsedKey, error) {
	key, err := parsePrivateKey(string(pemText))
	if err != nil {
		return ParsedKey{}, journal.Invalid(field, "%s", err)
	}
	var signer crypto.Signer = key
	fp, err := Fingerprint(signer.Public())
	if err != nil {
		return ParsedKey{}, journal.Invalid(field, "%s", err)
	}
	return ParsedKey{Signer: signer, Algorithm: algorithm(signer), Fingerprint: fp}, nil
}

func algorithm(k crypto.Signer) string {
	switch k.(type) {
	case *rsa.PrivateKey:
		return "RSA"
	case ed25519.PrivateKey:
		return "Ed25519"
	}
	return fmt.Sprintf("%T", k)
}

// Fingerprint is "SHA256:" and the unpadded base64 of the SHA-256 of the
// public key's PKIX (SubjectPublicKeyInfo) DER: what `openssl pkey -pubout
// -outform DER | openssl dgst -sha256 -binary | base64` prints, less the
// padding.
func Fingerprint(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:]), nil
}

// keyCacheSize bounds the parsed held keys kept, about one a sending actor.
const keyCacheSize = 512

// keyCache keeps parsed held keys by (key id, version): a message reads
// the key's version (one small row, no private key) and parses the key
// only when that version is not cached, so a rotation takes effect at the
// next message built and an old version is never used after it.
type keyCache struct {
	mu     sync.Mutex
	items  map[string]cachedKey // by key id: only the newest version read
	order  []string             // key ids, oldest first
	parses int                  // keys parsed, for tests
}

type cachedKey struct {
	version int64
	signer  crypto.Signer
}

// heldKey returns the parsed current version of key id from src.
func (c *keyCache) heldKey(ctx context.Context, src KeySource, id string) (crypto.Signer, error) {
	if src == nil {
		return nil, errors.New("config.private_key is left out and this herald has no key store to find key_id in")
	}
	v, err := src.ActorKeyVersion(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("key_id %q: %w", id, err)
	}
	c.mu.Lock()
	hit, ok := c.items[id]
	c.mu.Unlock()
	if ok && hit.version == v {
		return hit.signer, nil
	}
	k, err := src.ActorKey(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("key_id %q: %w", id, err)
	}
	parsed, err := ParseKey("private_key", k.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("the stored key %q (version %d): %w", id, k.Version, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parses++
	if c.items == nil {
		c.items = map[string]cachedKey{}
	}
	if old, ok := c.items[id]; ok && old.version > k.Version {
		return parsed.Signer, nil // a newer version was cached meanwhile
	}
	if _, ok := c.items[id]; !ok {
		c.order = append(c.order, id)
		if len(c.order) > keyCacheSize {
			delete(c.items, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.items[id] = cachedKey{version: k.Version, signer: parsed.Signer}
	return parsed.Signer, nil
}

// CheckKeyID checks a key id as config.key_id is checked: an absolute
// http(s) URI. Errors wrap journal.ErrInvalid and name field.
func CheckKeyID(field, id string) error {
	if err := checkKeyID("key_id", id); err != nil {
		if ie, ok := err.(*journal.InvalidError); ok {
			return &journal.InvalidError{Field: field, Reason: ie.Reason} // cut once, by checkURI
		}
		return err
	}
	return nil
}
