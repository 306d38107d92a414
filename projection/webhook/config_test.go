package webhook

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
)

// Secrets made for these tests only.
const (
	secretA = "whsec_tS7gVmFt0+1ToUyWqXAMq8TLQH+Fm4WyuxAzBQ+HZA8="
	secretB = "whsec_HyDsgbhT+/cQVlPSNwmKZN3ToOkElc+f"
)

func config(t testing.TB, envelope bool, secrets ...string) push.Config {
	t.Helper()
	raw, err := Config{Secrets: secrets, Envelope: envelope}.Encode()
	if err != nil {
		t.Fatalf("encode config: %v", err)
	}
	return raw
}

func TestConfigErrorsNameTheFieldAndHideTheSecret(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", n))) }
	many := make([]string, MaxSecrets+1)
	for i := range many {
		many[i] = "whsec_" + base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("secret-number-%02d-abcdefghij", i)))
	}
	var secrets []string
	for _, s := range []string{secretA, secretB, b64(16), many[0]} {
		secrets = append(secrets, strings.TrimPrefix(s, "whsec_")[:12])
	}
	projtest.Refuses(t, ParseConfig, New(), secrets,
		projtest.Refusal{Name: "empty", Raw: ``, Field: "config.secrets", Reason: "is empty"},
		projtest.Refusal{Name: "not JSON", Raw: `{"secrets": ["` + secretA[:20], Field: "config", Reason: "not a JSON object"},
		projtest.Refusal{Name: "not an object", Raw: `["` + secretA + `"]`, Field: "config", Reason: "not a JSON object"},
		projtest.Refusal{Name: "trailing data", Raw: `{"secrets":["` + secretA + `"]} {}`, Field: "config", Reason: "after the JSON object"},
		projtest.Refusal{Name: "unknown key", Raw: `{"secret":"` + secretA + `"}`, Field: "config", Reason: `unknown key "secret"`},
		projtest.Refusal{Name: "string, not array", Raw: `{"secrets":"` + secretA + `"}`, Field: "config.secrets", Reason: "array of strings"},
		projtest.Refusal{Name: "no secrets", Raw: `{"secrets":[]}`, Field: "config.secrets", Reason: "is empty"},
		projtest.Refusal{Name: "null", Raw: `null`, Field: "config.secrets", Reason: "is empty"},
		projtest.Refusal{Name: "too many", Raw: fmt.Sprintf(`{"secrets":["%s"]}`, strings.Join(many, `","`)), Field: "config.secrets", Reason: "more than"},
		projtest.Refusal{Name: "no prefix", Raw: `{"secrets":["` + strings.TrimPrefix(secretA, "whsec_") + `"]}`, Field: "config.secrets[0]", Reason: `does not start with "whsec_"`},
		projtest.Refusal{Name: "not base64", Raw: `{"secrets":["` + secretA + `","whsec_` + secretA[6:20] + `!!"]}`, Field: "config.secrets[1]", Reason: "base64"},
		projtest.Refusal{Name: "unpadded base64", Raw: `{"secrets":["whsec_` + strings.TrimRight(b64(32), "=") + `"]}`, Field: "config.secrets[0]", Reason: "base64"},
		projtest.Refusal{Name: "too short", Raw: `{"secrets":["whsec_` + b64(16) + `"]}`, Field: "config.secrets[0]", Reason: "decodes to 16 bytes"},
		projtest.Refusal{Name: "too long", Raw: `{"secrets":["whsec_` + b64(65) + `"]}`, Field: "config.secrets[0]", Reason: "decodes to 65 bytes"},
		projtest.Refusal{Name: "repeated", Raw: `{"secrets":["` + secretA + `","` + secretB + `","` + secretA + `"]}`, Field: "config.secrets[2]", Reason: "repeats config.secrets[0]"},
		projtest.Refusal{Name: "envelope not a boolean", Raw: `{"secrets":["` + secretA + `"],"envelope":"yes"}`, Field: "config.envelope", Reason: "must be a JSON boolean, not string"},
		projtest.Refusal{Name: "envelope without secrets", Raw: `{"envelope":true}`, Field: "config.secrets", Reason: "is empty"},
	)
}

// The envelope is off unless the config says true, and the stored form of
// a config without it has no envelope key.
func TestConfigEnvelopeIsOptional(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"secrets":["` + secretA + `"]}`:                  false,
		`{"secrets":["` + secretA + `"],"envelope":false}`: false,
		`{"secrets":["` + secretA + `"],"envelope":true}`:  true,
	} {
		c, err := ParseConfig(push.Config(raw))
		if err != nil || c.Envelope != want {
			t.Fatalf("%s: envelope %t, %v; want %t", raw, c.Envelope, err, want)
		}
	}
	if raw := string(config(t, false, secretA)); raw != `{"secrets":["`+secretA+`"]}` {
		t.Fatalf("a config without the envelope encodes as %s", raw)
	}
}

func TestConfigAcceptsOneToMaxSecrets(t *testing.T) {
	for _, secrets := range [][]string{{secretA}, {secretA, secretB}} {
		raw := config(t, false, secrets...)
		c, err := ParseConfig(raw)
		if err != nil || len(c.Secrets) != len(secrets) {
			t.Fatalf("%d secrets: parsed %d, %v", len(secrets), len(c.Secrets), err)
		}
		if err := New().ValidateConfig(push.Registration{Config: raw}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSecretsRedacted: no verb of fmt prints a secret of a Config, a
// message's signer, or a message.
func TestSecretsRedacted(t *testing.T) {
	c := Config{Secrets: []string{secretA, secretB}}
	reg := registration("https://hooks.example/x", config(t, false, secretA, secretB))
	msg := projtest.One(t, New(), journal.Record{ID: "evt_1", Payload: []byte(`{}`)}, reg)
	s := msg.Signer.(*signer)
	type holder struct{ C Config }
	for _, out := range append(projtest.Printed(c, &c, holder{c}, []Config{c}, msg, &msg, msg.Signer, s, *s, reg), projtest.Logged(c)...) {
		if strings.Contains(out, secretA[6:18]) || strings.Contains(out, secretB[6:18]) || strings.Contains(out, "whsec_") {
			t.Fatalf("%s leaks a secret", out)
		}
	}
	if out := fmt.Sprintf("%+v", c); !strings.Contains(out, "2 redacted") {
		t.Errorf("%%+v of Config = %s: want a redaction marker", out)
	}
}

// FuzzParseConfig: a registration's config is outside input (an operator's
// flags, a caller's API request): see projtest.ConfigFuzz. An accepted
// config also re-encodes to one that parses the same (secrets and
// envelope).
func FuzzParseConfig(f *testing.F) {
	projtest.ConfigFuzz[Config]{
		Parse: ParseConfig,
		Secrets: func(raw []byte) (secrets, _ []string) {
			for _, s := range projtest.Strings(raw, "secrets") {
				if len(s) >= 12 {
					secrets = append(secrets, s)
				}
			}
			return secrets, nil
		},
		Printed: func(c Config) (out []string) {
			for _, s := range c.Secrets {
				out = append(out, strings.TrimPrefix(s, SecretPrefix))
			}
			return out
		},
		Accepted: func(t *testing.T, raw []byte, c Config) {
			enc, err := c.Encode()
			if err != nil {
				t.Fatalf("an accepted config does not encode: %v", err)
			}
			again, err := ParseConfig(enc)
			if err != nil || fmt.Sprint(again.Secrets) != fmt.Sprint(c.Secrets) || again.Envelope != c.Envelope {
				t.Fatalf("%s re-encodes to %s, which parses to %v (envelope %t), %v", raw, enc, again.Secrets, again.Envelope, err)
			}
		},
	}.Fuzz(f,
		`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`,
		`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`,
		`{"secrets":["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`, `{"secrets":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`,
		`{"secret":["whsec_x"]}`, `{"secrets":[]}`, `null`, ``, `{"secrets":["whsec_AAAA"]} {}`, `[1]`,
		`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],"envelope":true}`,
		`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],"envelope":"yes"}`, `{"envelope":true}`)
}
