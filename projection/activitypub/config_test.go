package activitypub

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// keyLines returns the base64 lines of a PEM text: what must never leak.
func keyLines(pemText string) []string {
	var out []string
	for _, l := range strings.Split(pemText, "\n") {
		if l != "" && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestConfigAcceptsPKCS8AndPKCS1(t *testing.T) {
	pkcs8, pub := testKey(t)
	for name, pemText := range map[string]string{"PKCS#8": pkcs8, "PKCS#1": pkcs1(t, pkcs8)} {
		raw := mustJSON(t, Config{KeyID: aliceKeyID, PrivateKey: pemText, Actors: []string{bob}, Followers: []string{aliceFollowers}})
		c, err := ParseConfig(push.Config(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s, err := c.settings()
		if err != nil || !s.key.PublicKey.Equal(pub) || s.keyID != aliceKeyID || !s.actors[bob] || !s.followers[aliceFollowers] {
			t.Fatalf("%s: parsed %+v, %v", name, s, err)
		}
		if err := New().ValidateConfig(push.Registration{Config: push.Config(raw)}); err != nil {
			t.Fatalf("%s: ValidateConfig: %v", name, err)
		}
	}
}

func TestConfigErrorsNameTheFieldAndHideTheKey(t *testing.T) {
	pkcs8, _ := testKey(t)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	smallPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(small)}))
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	ecPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}))
	pubDER, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	// A key whose DER is damaged: the base64 of the real key, cut short.
	lines := keyLines(pkcs8)
	damaged := "-----BEGIN PRIVATE KEY-----\n" + strings.Join(lines[:len(lines)/2], "\n") + "\n-----END PRIVATE KEY-----\n"
	encrypted := "-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + strings.Join(lines, "\n") + "\n-----END ENCRYPTED PRIVATE KEY-----\n"

	cfg := func(c Config) string { return mustJSON(t, c) }
	good := Config{KeyID: aliceKeyID, PrivateKey: pkcs8}
	with := func(f func(*Config)) string { c := good; f(&c); return cfg(c) }
	cases := []struct{ name, raw, field, reason string }{
		{"empty", ``, "config.key_id", "is required"},
		{"not an object", `["` + pkcs8 + `"]`, "config", "is not a JSON object"},
		{"not JSON", `{"private_key": "` + lines[0], "config", "not a JSON object"},
		{"trailing data", cfg(good) + `{}`, "config", "after the JSON object"},
		{"unknown key", `{"privateKey":"x"}`, "config", `unknown key "privateKey"`},
		{"wrong type", `{"actors":"` + bob + `"}`, "config.actors", "array of strings"},
		{"no key_id", with(func(c *Config) { c.KeyID = "" }), "config.key_id", "is required"},
		{"relative key_id", with(func(c *Config) { c.KeyID = "/users/alice#main-key" }), "config.key_id", "absolute"},
		{"no private_key", with(func(c *Config) { c.PrivateKey = "" }), "config.private_key", "is required"},
		{"not PEM", with(func(c *Config) { c.PrivateKey = lines[0] + lines[1] }), "config.private_key", "is not PEM"},
		{"damaged DER", with(func(c *Config) { c.PrivateKey = damaged }), "config.private_key", "does not parse"},
		{"encrypted", with(func(c *Config) { c.PrivateKey = encrypted }), "config.private_key", "encrypted"},
		{"public key", with(func(c *Config) { c.PrivateKey = pubPEM }), "config.private_key", "private key is required"},
		{"ECDSA key", with(func(c *Config) { c.PrivateKey = ecPEM }), "config.private_key", "ECDSA"},
		{"1024-bit RSA", with(func(c *Config) { c.PrivateKey = smallPEM }), "config.private_key", "1024-bit"},
		{"empty actors", mustJSON(t, map[string]any{"key_id": aliceKeyID, "private_key": pkcs8, "actors": []string{}}), "config.actors", "empty list"},
		{"bad actor", with(func(c *Config) { c.Actors = []string{bob, "bob"} }), "config.actors[1]", "absolute"},
		{"followers without actors", with(func(c *Config) { c.Followers = []string{aliceFollowers} }), "config.followers", "needs actors"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig(push.Config(c.raw))
			var ie *journal.InvalidError
			if !errors.Is(err, journal.ErrInvalid) || !errors.As(err, &ie) {
				t.Fatalf("error %v, want a *journal.InvalidError", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "invalid "+c.field+":") || !strings.Contains(msg, c.reason) {
				t.Errorf("error %q, want field %s and %q", msg, c.field, c.reason)
			}
			for _, secret := range append(keyLines(pkcs8), keyLines(smallPEM)...) {
				if strings.Contains(msg, secret[:16]) {
					t.Fatalf("error %q leaks key material", msg)
				}
			}
			if verr := New().ValidateConfig(push.Registration{Config: push.Config(c.raw)}); verr == nil || verr.Error() != msg {
				t.Errorf("ValidateConfig = %v, want the same error as ParseConfig", verr)
			}
		})
	}
}

// TestSecretsRedacted: no verb of fmt prints the private key of a Config,
// a message's signer, or a message.
func TestSecretsRedacted(t *testing.T) {
	pkcs8, _ := testKey(t)
	c := Config{KeyID: aliceKeyID, PrivateKey: pkcs8, Actors: []string{bob}}
	reg := registration("https://remote.example/users/bob/inbox", config(t, []string{bob}, nil))
	msgs, err := New().Messages(context.Background(), record(t, "r", map[string]any{"type": "Like", "to": bob}), reg)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Messages: %v %d", err, len(msgs))
	}
	msg := msgs[0]
	s := msg.Signer.(*signer)
	type holder struct{ C Config }
	for _, v := range []any{c, &c, holder{c}, []Config{c}, msg, &msg, msg.Signer, s, *s, reg} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			out := fmt.Sprintf(verb, v)
			if strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, keyLines(pkcs8)[1]) {
				t.Fatalf("%s of %T leaks the key: %s", verb, v, out)
			}
		}
	}
	if out := fmt.Sprintf("%+v", c); !strings.Contains(out, "redacted") || !strings.Contains(out, aliceKeyID) {
		t.Errorf("%%+v of Config = %s: want the key id and a redaction marker", out)
	}
}

func TestConfigEncodeRoundTrips(t *testing.T) {
	pkcs8, _ := testKey(t)
	c := Config{KeyID: aliceKeyID, PrivateKey: pkcs8, Actors: []string{bob}, Followers: []string{aliceFollowers}}
	raw, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseConfig(raw)
	if err != nil || back.String() != c.String() || back.PrivateKey != c.PrivateKey {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	if _, err := (Config{KeyID: aliceKeyID}).Encode(); !errors.Is(err, journal.ErrInvalid) {
		t.Fatalf("Encode of an invalid config: %v, want ErrInvalid", err)
	}
}
