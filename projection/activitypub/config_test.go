package activitypub

import (
	"cmp"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
)

const (
	alice          = "https://example.com/users/alice"
	aliceKeyID     = alice + "#main-key"
	aliceFollowers = alice + "/followers"
	bob            = "https://remote.example/users/bob"
	carol          = "https://other.example/users/carol"
)

// testKey returns the PEM of the test actor's key and its public half.
func testKey(t testing.TB) (string, *rsa.PublicKey) {
	t.Helper()
	pemText := string(projtest.Testdata(t, "activitypub/alice-test-key.pem"))
	key, err := parsePrivateKey(pemText)
	if err != nil {
		t.Fatalf("test key: %v", err)
	}
	return pemText, key.Public().(*rsa.PublicKey)
}

// config returns a registration config for alice's key serving actors, no
// scheme pinned.
func config(t testing.TB, actors, followers []string) push.Config {
	return schemeConfig(t, "", actors, followers)
}

// schemeConfig is config pinning scheme.
func schemeConfig(t testing.TB, scheme string, actors, followers []string) push.Config {
	t.Helper()
	pemText, _ := testKey(t)
	raw, err := Config{KeyID: aliceKeyID, PrivateKey: pemText, SignatureScheme: scheme, Actors: actors, Followers: followers}.Encode()
	if err != nil {
		t.Fatalf("encode config: %v", err)
	}
	return raw
}

var base64Line = regexp.MustCompile(`^[A-Za-z0-9+/=]{16,}$`)

// keyLines returns the base64 lines of a PEM text: what must never leak.
func keyLines(pemText string) []string {
	var out []string
	for _, line := range strings.Split(pemText, "\n") {
		if base64Line.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestConfigAcceptsPKCS8AndPKCS1(t *testing.T) {
	pkcs8, pub := testKey(t)
	key, err := parsePrivateKey(pkcs8)
	if err != nil {
		t.Fatal(err)
	}
	pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey))}))
	for name, pemText := range map[string]string{"PKCS#8": pkcs8, "PKCS#1": pkcs1} {
		raw := mustJSON(t, Config{KeyID: aliceKeyID, PrivateKey: pemText, Actors: []string{bob}, Followers: []string{aliceFollowers}})
		c, err := ParseConfig(push.Config(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s, err := c.settings()
		if err != nil || !pub.Equal(s.http.Signer.Public()) || s.http.ID != aliceKeyID || !s.actors[bob] || !s.followers[aliceFollowers] {
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
	ec, ecKeyPEM := keytest.ECDSA(t)
	ecPEM := string(ecKeyPEM)
	pubDER, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	// A key whose DER is damaged: the base64 of the real key, cut short.
	lines := keyLines(pkcs8)
	damaged := "-----BEGIN PRIVATE KEY-----\n" + strings.Join(lines[:len(lines)/2], "\n") + "\n-----END PRIVATE KEY-----\n"
	encrypted := "-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + strings.Join(lines, "\n") + "\n-----END ENCRYPTED PRIVATE KEY-----\n"

	good := Config{KeyID: aliceKeyID, PrivateKey: pkcs8}
	with := func(f func(*Config)) string { c := good; f(&c); return mustJSON(t, c) }
	var secrets []string
	for _, l := range append(keyLines(pkcs8), keyLines(smallPEM)...) {
		secrets = append(secrets, l[:16])
	}
	projtest.Refuses(t, ParseConfig, New(), secrets,
		projtest.Refusal{Name: "empty", Raw: ``, Field: "config.key_id", Reason: "is required"},
		projtest.Refusal{Name: "not an object", Raw: `["` + pkcs8 + `"]`, Field: "config", Reason: "is not a JSON object"},
		projtest.Refusal{Name: "not JSON", Raw: `{"private_key": "` + lines[0], Field: "config", Reason: "not a JSON object"},
		projtest.Refusal{Name: "trailing data", Raw: mustJSON(t, good) + `{}`, Field: "config", Reason: "after the JSON object"},
		projtest.Refusal{Name: "unknown key", Raw: `{"privateKey":"x"}`, Field: "config", Reason: `unknown key "privateKey"`},
		projtest.Refusal{Name: "wrong type", Raw: `{"actors":"` + bob + `"}`, Field: "config.actors", Reason: "array of strings"},
		projtest.Refusal{Name: "no key_id", Raw: with(func(c *Config) { c.KeyID = "" }), Field: "config.key_id", Reason: "is required"},
		projtest.Refusal{Name: "relative key_id", Raw: with(func(c *Config) { c.KeyID = "/users/alice#main-key" }), Field: "config.key_id", Reason: "absolute"},
		projtest.Refusal{Name: "not PEM", Raw: with(func(c *Config) { c.PrivateKey = lines[0] + lines[1] }), Field: "config.private_key", Reason: "is not PEM"},
		projtest.Refusal{Name: "damaged DER", Raw: with(func(c *Config) { c.PrivateKey = damaged }), Field: "config.private_key", Reason: "does not parse"},
		projtest.Refusal{Name: "encrypted", Raw: with(func(c *Config) { c.PrivateKey = encrypted }), Field: "config.private_key", Reason: "encrypted"},
		projtest.Refusal{Name: "public key", Raw: with(func(c *Config) { c.PrivateKey = pubPEM }), Field: "config.private_key", Reason: "private key is required"},
		projtest.Refusal{Name: "ECDSA key", Raw: with(func(c *Config) { c.PrivateKey = ecPEM }), Field: "config.private_key", Reason: "ECDSA"},
		projtest.Refusal{Name: "1024-bit RSA", Raw: with(func(c *Config) { c.PrivateKey = smallPEM }), Field: "config.private_key", Reason: "is an RSA key of 1024 bits"},
		projtest.Refusal{Name: "empty actors", Raw: mustJSON(t, map[string]any{"key_id": aliceKeyID, "private_key": pkcs8, "actors": []string{}}), Field: "config.actors", Reason: "empty list"},
		projtest.Refusal{Name: "bad actor", Raw: with(func(c *Config) { c.Actors = []string{bob, "bob"} }), Field: "config.actors[1]", Reason: "absolute"},
		projtest.Refusal{Name: "followers without actors", Raw: with(func(c *Config) { c.Followers = []string{aliceFollowers} }), Field: "config.followers", Reason: "needs actors"},
		projtest.Refusal{Name: "unknown scheme", Raw: with(func(c *Config) { c.SignatureScheme = "hs2019" }), Field: "config.signature_scheme", Reason: `"hs2019": it must be`},
		projtest.Refusal{Name: "cavage with Ed25519", Raw: with(func(c *Config) { c.PrivateKey, c.SignatureScheme = edPEM(t), SchemeCavage }), Field: "config.signature_scheme", Reason: "RSA keys only"},
		projtest.Refusal{Name: "proof by an RSA key", Raw: with(func(c *Config) { c.ProofKeyID = aliceKeyID }), Field: "config.private_key", Reason: "needs the actor's Ed25519 key"},
		projtest.Refusal{Name: "proof key without its id", Raw: with(func(c *Config) { c.ProofPrivateKey = edPEM(t) }), Field: "config.proof_private_key", Reason: "needs proof_key_id"},
		projtest.Refusal{Name: "relative proof_key_id", Raw: with(func(c *Config) { c.ProofKeyID, c.ProofPrivateKey = "#multikey", edPEM(t) }), Field: "config.proof_key_id", Reason: "absolute"},
		projtest.Refusal{Name: "RSA proof_private_key", Raw: with(func(c *Config) { c.ProofKeyID, c.ProofPrivateKey = aliceKeyID, pkcs8 }), Field: "config.proof_private_key", Reason: "Ed25519"},
	)
}

// edPEM is a new Ed25519 key, PKCS#8 PEM.
func edPEM(t testing.TB) string {
	t.Helper()
	_, p := keytest.Ed25519(t)
	return string(p)
}

// TestSchemesFollowTheKeyAndThePin: an RSA key knocks twice unless
// pinned; an Ed25519 key signs RFC 9421 only; each message's signer has
// the registration's schemes.
func TestSchemesFollowTheKeyAndThePin(t *testing.T) {
	rsaPEM, _ := testKey(t)
	for _, c := range []struct {
		key, pin string
		want     []string
	}{
		{rsaPEM, "", []string{SchemeRFC9421, SchemeCavage}},
		{rsaPEM, SchemeRFC9421, []string{SchemeRFC9421}},
		{rsaPEM, SchemeCavage, []string{SchemeCavage}},
		{edPEM(t), "", []string{SchemeRFC9421}},
		{edPEM(t), SchemeRFC9421, []string{SchemeRFC9421}},
	} {
		raw, err := Config{KeyID: aliceKeyID, PrivateKey: c.key, SignatureScheme: c.pin}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		msg := projtest.One(t, New(), record(t, "r", map[string]any{"type": "Like"}), registration("https://remote.example/inbox", raw))
		if got := msg.Signer.(*Signer).Schemes(); !slices.Equal(got, c.want) {
			t.Errorf("pin %q: schemes %q, want %q", c.pin, got, c.want)
		}
		if ShownScheme(raw) != cmp.Or(c.pin, SchemeAuto) {
			t.Errorf("pin %q: shown as %q", c.pin, ShownScheme(raw))
		}
	}
}

// TestSecretsRedacted: no verb of fmt prints the private key of a Config,
// a message's signer, or a message.
func TestSecretsRedacted(t *testing.T) {
	pkcs8, _ := testKey(t)
	proofKey := edPEM(t)
	c := Config{KeyID: aliceKeyID, PrivateKey: pkcs8, ProofKeyID: aliceKeyID, ProofPrivateKey: proofKey, Actors: []string{bob}}
	reg := registration("https://remote.example/users/bob/inbox", config(t, []string{bob}, nil))
	msg := projtest.One(t, New(), record(t, "r", map[string]any{"type": "Like", "to": bob}), reg)
	s := msg.Signer.(*Signer)
	type holder struct{ C Config }
	for _, out := range append(projtest.Printed(c, &c, holder{c}, []Config{c}, msg, &msg, msg.Signer, s, *s, reg), projtest.Logged(c)...) {
		if strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, keyLines(pkcs8)[1]) || strings.Contains(out, keyLines(proofKey)[0]) {
			t.Fatalf("%s leaks the key", out)
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
	if _, err := (Config{PrivateKey: pkcs8}).Encode(); !errors.Is(err, journal.ErrInvalid) {
		t.Fatalf("Encode of an invalid config: %v, want ErrInvalid", err)
	}
}

// FuzzParseConfig: a registration's config is outside input (see
// projtest.ConfigFuzz); a secret is a line of the private key.
func FuzzParseConfig(f *testing.F) {
	pemText, _ := testKey(f)
	good := mustJSON(f, Config{KeyID: aliceKeyID, PrivateKey: pemText, Actors: []string{bob}, Followers: []string{aliceFollowers}})
	broken := strings.Replace(pemText, "A", "*", 3)
	projtest.ConfigFuzz[Config]{
		Parse: ParseConfig,
		Secrets: func(raw []byte) (secrets, _ []string) {
			for _, k := range projtest.Strings(raw, "private_key") {
				secrets = append(secrets, keyLines(k)...)
			}
			return secrets, nil
		},
		Printed: func(c Config) []string { return keyLines(c.PrivateKey) },
	}.Fuzz(f,
		good, fmt.Sprintf(`{"key_id":%q,"private_key":%q}`, aliceKeyID, broken),
		fmt.Sprintf(`{"key_id":"not a uri","private_key":%q}`, pemText), fmt.Sprintf(`{"key_id":%q,"private_key":"hello"}`, aliceKeyID),
		fmt.Sprintf(`{"key_id":%q,"private_key":%q,"followers":["x"]}`, aliceKeyID, pemText), `{"key_id":1}`, `{"kid":"x"}`, ``, `null`)
}
