package webhook

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

func TestConfigErrorsNameTheFieldAndHideTheSecret(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", n))) }
	many := make([]string, MaxSecrets+1)
	for i := range many {
		many[i] = "whsec_" + base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("secret-number-%02d-abcdefghij", i)))
	}
	cases := []struct{ name, raw, field, reason string }{
		{"empty", ``, "config.secrets", "is empty"},
		{"not JSON", `{"secrets": ["` + secretA[:20], "config", "not a JSON object"},
		{"not an object", `["` + secretA + `"]`, "config", "not a JSON object"},
		{"trailing data", `{"secrets":["` + secretA + `"]} {}`, "config", "after the JSON object"},
		{"unknown key", `{"secret":"` + secretA + `"}`, "config", `unknown key "secret"`},
		{"string, not array", `{"secrets":"` + secretA + `"}`, "config.secrets", "array of strings"},
		{"no secrets", `{"secrets":[]}`, "config.secrets", "is empty"},
		{"null", `null`, "config.secrets", "is empty"},
		{"too many", fmt.Sprintf(`{"secrets":["%s"]}`, strings.Join(many, `","`)), "config.secrets", "more than"},
		{"no prefix", `{"secrets":["` + strings.TrimPrefix(secretA, "whsec_") + `"]}`, "config.secrets[0]", `does not start with "whsec_"`},
		{"not base64", `{"secrets":["` + secretA + `","whsec_` + secretA[6:20] + `!!"]}`, "config.secrets[1]", "base64"},
		{"unpadded base64", `{"secrets":["whsec_` + strings.TrimRight(b64(32), "=") + `"]}`, "config.secrets[0]", "base64"},
		{"too short", `{"secrets":["whsec_` + b64(16) + `"]}`, "config.secrets[0]", "decodes to 16 bytes"},
		{"too long", `{"secrets":["whsec_` + b64(65) + `"]}`, "config.secrets[0]", "decodes to 65 bytes"},
		{"repeated", `{"secrets":["` + secretA + `","` + secretB + `","` + secretA + `"]}`, "config.secrets[2]", "repeats config.secrets[0]"},
		{"envelope not a boolean", `{"secrets":["` + secretA + `"],"envelope":"yes"}`, "config.envelope", "must be a JSON boolean, not string"},
		{"envelope without secrets", `{"envelope":true}`, "config.secrets", "is empty"},
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
			for _, s := range []string{secretA, secretB, b64(16), many[0]} {
				if strings.Contains(msg, strings.TrimPrefix(s, "whsec_")[:12]) {
					t.Fatalf("error %q leaks a secret", msg)
				}
			}
			if verr := New().ValidateConfig(push.Registration{Config: push.Config(c.raw)}); verr == nil || verr.Error() != msg {
				t.Errorf("ValidateConfig = %v, want the same error as ParseConfig", verr)
			}
		})
	}
}

// The envelope is off unless the config says true, and the stored form of
// a config without it is what it was before the envelope existed.
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
	if raw := string(config(t, secretA)); raw != `{"secrets":["`+secretA+`"]}` {
		t.Fatalf("a config without the envelope encodes as %s", raw)
	}
}

func TestConfigAcceptsOneToMaxSecrets(t *testing.T) {
	for _, secrets := range [][]string{{secretA}, {secretA, secretB}} {
		raw, err := Config{Secrets: secrets}.Encode()
		if err != nil {
			t.Fatalf("%d secrets: %v", len(secrets), err)
		}
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
	reg := registration("https://hooks.example/x", config(t, secretA, secretB))
	msgs, err := New().Messages(context.Background(), journal.Record{ID: "evt_1", Payload: []byte(`{}`)}, reg)
	if err != nil {
		t.Fatal(err)
	}
	msg := msgs[0]
	s := msg.Signer.(*signer)
	type holder struct{ C Config }
	for _, v := range []any{c, &c, holder{c}, []Config{c}, msg, &msg, msg.Signer, s, *s, reg} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			out := fmt.Sprintf(verb, v)
			for _, secret := range []string{secretA, secretB} {
				if strings.Contains(out, secret[6:18]) || strings.Contains(out, "whsec_") {
					t.Fatalf("%s of %T leaks a secret: %s", verb, v, out)
				}
			}
		}
	}
	if out := fmt.Sprintf("%+v", c); !strings.Contains(out, "2 redacted") {
		t.Errorf("%%+v of Config = %s: want a redaction marker", out)
	}
}
