package webhook_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
)

// FuzzParseConfig: a registration's config is outside input (an operator's
// flags, a caller's API request). Parsing never panics; a refusal wraps
// journal.ErrInvalid and never repeats a secret; an accepted config
// re-encodes to one that parses the same (secrets and envelope), and no fmt
// verb prints a secret.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`,
		`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`,
		`{"secrets":["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`, `{"secrets":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`,
		`{"secret":["whsec_x"]}`, `{"secrets":[]}`, `null`, ``, `{"secrets":["whsec_AAAA"]} {}`, `[1]`,
		`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],"envelope":true}`,
		`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],"envelope":"yes"}`, `{"envelope":true}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := webhook.ParseConfig(push.Config(raw))
		secrets := stringsUnder(raw, "secrets")
		if err != nil {
			if !errors.Is(err, journal.ErrInvalid) {
				t.Fatalf("ParseConfig: %v does not wrap journal.ErrInvalid", err)
			}
			// An unknown key's name (input, not a secret) may be quoted and
			// may happen to hold a secret's bytes: look outside it.
			said := projtest.WithoutUnknownKey(err.Error())
			for _, s := range secrets {
				if len(s) >= 12 && strings.Contains(said, s) {
					t.Fatalf("ParseConfig's error %q repeats the secret %q", err, s)
				}
			}
			return
		}
		enc, err := c.Encode()
		if err != nil {
			t.Fatalf("an accepted config does not encode: %v", err)
		}
		again, err := webhook.ParseConfig(enc)
		if err != nil || fmt.Sprint(again.Secrets) != fmt.Sprint(c.Secrets) || again.Envelope != c.Envelope {
			t.Fatalf("%s re-encodes to %s, which parses to %v (envelope %t), %v", raw, enc, again.Secrets, again.Envelope, err)
		}
		printed := fmt.Sprintf("%v %+v %#v %s %q", c, c, c, c, c)
		for _, s := range c.Secrets {
			if strings.Contains(printed, strings.TrimPrefix(s, webhook.SecretPrefix)) {
				t.Fatalf("a fmt verb prints a secret: %s", printed)
			}
		}
	})
}

// stringsUnder returns the strings a JSON object holds under key, as a
// string or in an array, if raw decodes at all.
func stringsUnder(raw []byte, key string) []string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	var one string
	if json.Unmarshal(obj[key], &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(obj[key], &many)
	return many
}
