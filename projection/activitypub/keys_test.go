package activitypub

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// heldConfig is a registration config naming alice's key by id only,
// pinned to draft-cavage, which verifySignature checks.
func heldConfig(t testing.TB) push.Config {
	t.Helper()
	raw, err := Config{KeyID: aliceKeyID, SignatureScheme: SchemeCavage, Actors: []string{bob}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func rsaPEM(t testing.TB) (string, *rsa.PublicKey) {
	t.Helper()
	k, p := keytest.RSA(t)
	return string(p), &k.PublicKey
}

func addKey(t testing.TB, ks store.ActorKeyStore, id, pemText string) {
	t.Helper()
	p, err := ParseKey("private_key", []byte(pemText))
	if err != nil {
		t.Fatal(err)
	}
	if err := ks.AddActorKey(t.Context(), store.ActorKey{ID: id, PrivateKey: []byte(pemText), Algorithm: p.Algorithm, Fingerprint: p.Fingerprint, Created: at}); err != nil {
		t.Fatal(err)
	}
}

// TestHeldKeyRotationSignsTheNextAttemptWithTheNewKey: a registration
// naming a held key signs with it; after a rotation the next message is
// signed with the new key, which the receiver verifies, and never with the
// old one; a key is parsed once per version, not once per message.
func TestHeldKeyRotationSignsTheNextAttemptWithTheNewKey(t *testing.T) {
	db := memory.New()
	oldPEM, oldPub := testKey(t)
	addKey(t, db, aliceKeyID, oldPEM)
	p := New(WithKeys(db))
	reg := registration("https://remote.example/users/bob/inbox", heldConfig(t))
	if err := p.ValidateConfig(reg); err != nil {
		t.Fatalf("a registration naming a held key: %v", err)
	}
	rec := record(t, "https://example.com/a/1", map[string]any{"type": "Like", "to": bob, "object": "https://x.example/o"})
	signs := func(pub *rsa.PublicKey) error {
		t.Helper()
		msg := projtest.One(t, p, rec, reg)
		req, err := projtest.NewRequest(t, reg.URL, msg, at)
		if err != nil {
			t.Fatal(err)
		}
		return verifySignature(req, pub)
	}
	for range 3 {
		if err := signs(oldPub); err != nil {
			t.Fatalf("before the rotation: %v", err)
		}
	}
	if p.parsed.parses != 1 {
		t.Fatalf("the held key was parsed %d times for 3 messages, want once", p.parsed.parses)
	}

	newPEM, newPub := rsaPEM(t)
	parsed, err := ParseKey("private_key", []byte(newPEM))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.RotateActorKey(t.Context(), store.ActorKey{ID: aliceKeyID, PrivateKey: []byte(newPEM), Algorithm: parsed.Algorithm, Fingerprint: parsed.Fingerprint}, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := signs(newPub); err != nil {
			t.Fatalf("after the rotation, the receiver's check with the new key: %v", err)
		}
		if err := signs(oldPub); err == nil {
			t.Fatal("after the rotation a message was signed with the old key")
		}
	}
	if p.parsed.parses != 2 {
		t.Fatalf("%d parses, want 2: one a version", p.parsed.parses)
	}

	// A key removed under a registration fails its messages (transient,
	// with evidence naming the key id), never signs with a cached key.
	if err := db.RemoveActorKey(t.Context(), aliceKeyID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Messages(t.Context(), rec, reg); !errors.Is(err, journal.ErrNotFound) || !strings.Contains(err.Error(), aliceKeyID) {
		t.Fatalf("Messages with the key removed: %v, want not found naming the key id", err)
	}
}

// TestRegistrationNamingAnUnknownKeyIDIsRefused: without private_key,
// key_id must name a held key, naming the field; a projection without a
// key store checks the shape and fails the messages.
func TestRegistrationNamingAnUnknownKeyIDIsRefused(t *testing.T) {
	reg := registration("https://remote.example/users/bob/inbox", heldConfig(t))
	err := New(WithKeys(memory.New())).ValidateConfig(reg)
	var ie *journal.InvalidError
	if !errors.As(err, &ie) || ie.Field != "config.key_id" || !strings.Contains(ie.Reason, "herald keys add") {
		t.Fatalf("unknown key id: %v, want config.key_id naming herald keys add", err)
	}
	p := New()
	if err := p.ValidateConfig(reg); err != nil {
		t.Fatalf("without a key store the shape alone is checked: %v", err)
	}
	rec := record(t, "https://example.com/a/1", map[string]any{"type": "Like", "to": bob, "object": "https://x.example/o"})
	if _, err := p.Messages(t.Context(), rec, reg); err == nil || !strings.Contains(err.Error(), "no key store") {
		t.Fatalf("Messages without a key store: %v, want an error saying so", err)
	}
}

// TestHeldEd25519KeyPinnedToCavageIsRefused: a registration naming a held
// Ed25519 key and pinning draft-cavage, which fediverse servers verify
// with RSA only, is refused naming config.signature_scheme, as the same
// key given as private_key is; an RSA key held under the id passes.
func TestHeldEd25519KeyPinnedToCavageIsRefused(t *testing.T) {
	db := memory.New()
	addKey(t, db, aliceKeyID, edPEM(t))
	reg := registration("https://remote.example/users/bob/inbox", heldConfig(t)) // pinned to cavage
	err := New(WithKeys(db)).ValidateConfig(reg)
	var ie *journal.InvalidError
	if !errors.As(err, &ie) || ie.Field != "config.signature_scheme" || !strings.Contains(ie.Reason, "Ed25519") {
		t.Fatalf("a held Ed25519 key pinned to cavage: %v, want config.signature_scheme saying Ed25519", err)
	}
	rsaKey, _ := rsaPEM(t)
	if _, err := db.RotateActorKey(t.Context(), store.ActorKey{ID: aliceKeyID, PrivateKey: []byte(rsaKey), Algorithm: "RSA", Fingerprint: "x"}, at); err != nil {
		t.Fatal(err)
	}
	if err := New(WithKeys(db)).ValidateConfig(reg); err != nil {
		t.Fatalf("an RSA key held under the id signs cavage: %v", err)
	}
}

// TestParseKeySaysTheAlgorithmAndFingerprint: the fingerprint is the
// SHA-256 of the public key, the same for the private key's two encodings.
func TestParseKeySaysTheAlgorithmAndFingerprint(t *testing.T) {
	pemText, pub := testKey(t)
	p, err := ParseKey("--private-key", []byte(pemText))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Fingerprint(pub)
	if err != nil {
		t.Fatal(err)
	}
	if p.Algorithm != "RSA" || p.Fingerprint != want || !strings.HasPrefix(want, "SHA256:") || len(want) != len("SHA256:")+43 {
		t.Fatalf("ParseKey = %s %s, want RSA %s", p.Algorithm, p.Fingerprint, want)
	}
	_, other := rsaPEM(t)
	if f, _ := Fingerprint(other); f == want {
		t.Fatal("two keys have one fingerprint")
	}
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	if f, err := Fingerprint(edPriv.Public()); err != nil || !strings.HasPrefix(f, "SHA256:") {
		t.Fatalf("Ed25519 fingerprint %q, %v", f, err)
	}
	_, err = ParseKey("--private-key", []byte("not a key"))
	var ie *journal.InvalidError
	if !errors.As(err, &ie) || ie.Field != "--private-key" {
		t.Fatalf("bad key: %v, want an error naming --private-key", err)
	}
}
