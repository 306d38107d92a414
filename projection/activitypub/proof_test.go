package activitypub

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
)

// proofRegistration registers to bob's inbox with eve's Ed25519 key
// signing both the request and the proofs.
func proofRegistration(t *testing.T) push.Registration {
	t.Helper()
	raw, err := Config{KeyID: "https://example.com/users/eve#main-key", PrivateKey: edPEM(t), ProofKeyID: "https://example.com/users/eve#multikey"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return registration("https://remote.example/users/bob/inbox", raw)
}

// TestAProofIsTheSameOnEveryRetry: the proof is part of the message, a
// pure function of the record (created is its AppendedAt; Ed25519 is
// deterministic), so a retry sends the same bytes; the data integrity
// context is appended to the activity's, the other members kept.
func TestAProofIsTheSameOnEveryRetry(t *testing.T) {
	reg := proofRegistration(t)
	rec := record(t, "https://example.com/a/1", map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "type": "Like", "bcc": bob, "object": "https://x.example/o"})
	rec.AppendedAt = time.Date(2026, 3, 14, 15, 9, 26, 500_000_000, time.UTC)
	first, again := projtest.One(t, New(), rec, reg), projtest.One(t, New(), rec, reg)
	if !bytes.Equal(first.Body, again.Body) {
		t.Fatalf("two projections differ:\n%s\n%s", first.Body, again.Body)
	}
	var got struct {
		Context []string       `json:"@context"`
		Object  string         `json:"object"`
		Bcc     any            `json:"bcc"`
		Proof   map[string]any `json:"proof"`
	}
	if err := json.Unmarshal(first.Body, &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Context, " ") != "https://www.w3.org/ns/activitystreams "+DataIntegrityContext || got.Object != "https://x.example/o" || got.Bcc != nil {
		t.Fatalf("body %s", first.Body)
	}
	p := got.Proof
	if p["type"] != "DataIntegrityProof" || p["cryptosuite"] != "eddsa-jcs-2022" || p["proofPurpose"] != "assertionMethod" ||
		p["verificationMethod"] != "https://example.com/users/eve#multikey" || p["created"] != "2026-03-14T15:09:26Z" ||
		!strings.HasPrefix(p["proofValue"].(string), "z") {
		t.Fatalf("proof %v", p)
	}
}

// TestAProducersProofIsSentAsItIs: an activity that carries a proof
// already is not signed again.
func TestAProducersProofIsSentAsItIs(t *testing.T) {
	rec := record(t, "https://example.com/a/1", map[string]any{"type": "Like", "proof": map[string]any{"type": "DataIntegrityProof"}})
	rec.AppendedAt = time.Now()
	if msg := projtest.One(t, New(), rec, proofRegistration(t)); !bytes.Equal(msg.Body, rec.Payload) {
		t.Fatalf("body %s, want the payload as appended", msg.Body)
	}
}

// TestBase58btcIsTheBitcoinAlphabet: draft-msporny-base58's example, and
// leading zero bytes as 1s; an Ed25519 Multikey starts z6Mk.
func TestBase58btcIsTheBitcoinAlphabet(t *testing.T) {
	for in, want := range map[string]string{"Hello World!": "2NEpo7TZRRrLZSi2U", "\x00\x00\x01": "112", "": ""} {
		if got := base58btc([]byte(in)); got != want {
			t.Errorf("base58btc(%q) = %q, want %q", in, got, want)
		}
	}
	if mk := base58btc(append([]byte{0xed, 0x01}, make([]byte, 32)...)); !strings.HasPrefix(mk, "6Mk") {
		t.Errorf("an Ed25519 multikey encodes as %q", mk)
	}
}
