package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/heraldpush/herald/journal"
)

// Prefix starts every value sealed in the hs1 format.
const Prefix = "hs1:"

// KeySize is the size of a key in bytes: AES-256.
const KeySize = 32

// Errors of Open; test them with errors.Is. Neither quotes the value.
var (
	// ErrUnknownKey: the value was sealed under a key id the keyring does
	// not hold (a *KeyError names it).
	ErrUnknownKey = errors.New("sealed under a key that is not in the keyring")
	// ErrOpen: the key id is known but the value does not open: it was
	// changed, moved from where it was sealed, or the key under that id is
	// another key.
	ErrOpen = errors.New("sealed value does not open: changed, moved from another row, or sealed under another key of the same id")
	// ErrMalformed: the value starts as a sealed value but is not one.
	ErrMalformed = errors.New("malformed sealed value")
)

// KeyError is ErrUnknownKey or ErrOpen with the key id involved.
type KeyError struct {
	ID  string
	Err error
}

func (e *KeyError) Error() string { return fmt.Sprintf("key %q: %v", e.ID, e.Err) }
func (e *KeyError) Unwrap() error { return e.Err }

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Keyring holds keys by id; the primary seals. The zero value holds none and
// seals nothing; a Keyring is safe for concurrent use and never changes.
type Keyring struct {
	ids     []string // in the order given; the last is the primary
	aeads   map[string]cipher.AEAD
	secrets map[string][]byte
}

// New returns a keyring of keys by id, ids in order, the last the primary.
// Errors name the bad id; they never quote a key.
func New(ids []string, keys map[string][]byte) (*Keyring, error) {
	if len(ids) == 0 {
		return nil, errors.New("keyring: no key")
	}
	k := &Keyring{aeads: map[string]cipher.AEAD{}, secrets: map[string][]byte{}}
	for _, id := range ids {
		if !idPattern.MatchString(id) {
			return nil, fmt.Errorf("keyring: key id %q must be 1 to 64 of A-Z a-z 0-9 . _ -", id)
		}
		if _, dup := k.aeads[id]; dup {
			return nil, fmt.Errorf("keyring: key id %q is given twice", id)
		}
		key := keys[id]
		if len(key) != KeySize {
			return nil, fmt.Errorf("keyring: key %q is %d bytes: a key is %d random bytes", id, len(key), KeySize)
		}
		block, _ := aes.NewCipher(key) // 32 bytes: never fails
		aead, _ := cipher.NewGCM(block)
		k.ids, k.aeads[id], k.secrets[id] = append(k.ids, id), aead, bytes.Clone(key)
	}
	return k, nil
}

// Generate returns a keyring of one new random key.
func Generate() *Keyring {
	id, key := newKey()
	k, _ := New([]string{id}, map[string][]byte{id: key})
	return k
}

// newKey returns a random key and an id for it: "k" and 8 hex digits.
func newKey() (string, []byte) {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	return "k" + hex.EncodeToString(id), key
}

// Rotated returns a copy of k with a new random key as its primary; k's keys
// still open what they sealed.
func (k *Keyring) Rotated() *Keyring {
	id, key := newKey()
	keys := map[string][]byte{id: key}
	for _, old := range k.ids {
		keys[old] = k.secrets[old]
	}
	out, _ := New(append(slices.Clone(k.ids), id), keys)
	return out
}

// Without returns a copy of k without key id, which must not be the
// primary.
func (k *Keyring) Without(id string) (*Keyring, error) {
	if _, ok := k.aeads[id]; !ok {
		return nil, fmt.Errorf("keyring: no key %s (it has %s)", journal.Quoted(id), strings.Join(k.ids, ", "))
	}
	if id == k.Primary() {
		return nil, fmt.Errorf("keyring: key %q is the primary: rotate first, then reseal, then retire it", id)
	}
	ids := slices.DeleteFunc(slices.Clone(k.ids), func(s string) bool { return s == id })
	return New(ids, k.secrets)
}

// Primary returns the id of the key that seals; "" for a nil keyring.
func (k *Keyring) Primary() string {
	if k == nil || len(k.ids) == 0 {
		return ""
	}
	return k.ids[len(k.ids)-1]
}

// IDs returns the key ids, the primary last.
func (k *Keyring) IDs() []string {
	if k == nil {
		return nil
	}
	return slices.Clone(k.ids)
}

// Seal encrypts plaintext under the primary key, bound to ad (AD).
func (k *Keyring) Seal(plaintext, ad []byte) []byte {
	id := k.Primary()
	aead := k.aeads[id]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	_, _ = rand.Read(nonce)
	sealed := aead.Seal(nonce, nonce, plaintext, ad)
	out := make([]byte, 0, len(Prefix)+len(id)+1+base64.RawURLEncoding.EncodedLen(len(sealed)))
	out = append(append(append(out, Prefix...), id...), ':')
	return base64.RawURLEncoding.AppendEncode(out, sealed)
}

// IsSealed reports whether v is a sealed value (it starts with Prefix).
func IsSealed(v []byte) bool { return bytes.HasPrefix(v, []byte(Prefix)) }

// KeyID returns the id of the key that sealed v; ok is false when v is not
// a sealed value.
func KeyID(v []byte) (id string, ok bool) {
	rest, ok := bytes.CutPrefix(v, []byte(Prefix))
	if !ok {
		return "", false
	}
	i := bytes.IndexByte(rest, ':')
	if i < 0 || !idPattern.Match(rest[:i]) {
		return "", false
	}
	return string(rest[:i]), true
}

// Open decrypts v, sealed by Seal with the same ad. Errors wrap
// ErrMalformed, ErrUnknownKey or ErrOpen (the last two as a *KeyError).
// A nil keyring opens nothing: ErrUnknownKey.
func (k *Keyring) Open(v, ad []byte) ([]byte, error) {
	id, ok := KeyID(v)
	if !ok {
		return nil, ErrMalformed
	}
	var aead cipher.AEAD
	if k != nil {
		aead = k.aeads[id]
	}
	if aead == nil {
		return nil, &KeyError{ID: id, Err: ErrUnknownKey}
	}
	sealed, err := base64.RawURLEncoding.Strict().DecodeString(string(v[len(Prefix)+len(id)+1:]))
	if err != nil || len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, &KeyError{ID: id, Err: ErrMalformed}
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], ad)
	if err != nil {
		return nil, &KeyError{ID: id, Err: ErrOpen}
	}
	return plain, nil
}

// AD builds additional data from parts, each length-prefixed so that no two
// lists of parts give the same bytes ("a/b","c" and "a","b/c" differ).
func AD(parts ...string) []byte {
	var out []byte
	for _, p := range parts {
		out = binary.AppendUvarint(out, uint64(len(p)))
		out = append(out, p...)
	}
	return out
}
