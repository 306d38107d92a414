package cloudevents_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
)

const secret = "s3cr3t-bearer-value"

func TestParseConfig(t *testing.T) {
	for _, g := range []struct {
		raw  string
		want cloudevents.Config
	}{
		{`{"source":"https://shop.example/orders"}`, cloudevents.Config{Source: "https://shop.example/orders"}},
		{`{"source":"/orders","structured":true,"token":"` + secret + `"}`, cloudevents.Config{Source: "/orders", Structured: true, Token: secret}},
		{`{"source":"urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66","structured":false}`, cloudevents.Config{Source: "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"}},
	} {
		if got, err := cloudevents.ParseConfig(push.Config(g.raw)); err != nil || !reflect.DeepEqual(got, g.want) {
			t.Errorf("ParseConfig(%s) = %+v, %v; want %+v", g.raw, got, err, g.want)
		}
	}
	projtest.Refuses(t, cloudevents.ParseConfig, cloudevents.New(), []string{secret},
		projtest.Refusal{Raw: ``, Field: "config.source", Reason: "is missing"},
		projtest.Refusal{Raw: `{}`, Field: "config.source", Reason: "is missing"},
		projtest.Refusal{Raw: `{"source":""}`, Field: "config.source", Reason: "is missing"},
		projtest.Refusal{Raw: `{"source":"https://shop.example/my orders"}`, Field: "config.source", Reason: "space or control character at byte 23"},
		projtest.Refusal{Raw: `{"source":"http://[::1"}`, Field: "config.source", Reason: "is not a URI-reference"},
		projtest.Refusal{Raw: `{"source":"/orders","token":"two words` + secret + `"}`, Field: "config.token", Reason: "not visible ASCII at byte 3"},
		projtest.Refusal{Raw: `{"source":"/orders","token":"` + secret + "\\u00e9" + `"}`, Field: "config.token", Reason: "not visible ASCII"},
		projtest.Refusal{Raw: `{"source":"/orders","tokn":"` + secret + `"}`, Field: "config", Reason: `unknown key "tokn"`},
		projtest.Refusal{Raw: `{"source":"/orders","structured":"yes"}`, Field: "config.structured", Reason: "must be a JSON boolean, not string"},
		projtest.Refusal{Raw: `{"source":42}`, Field: "config.source", Reason: "must be a JSON string, not number"},
		projtest.Refusal{Raw: `["` + secret + `"]`, Field: "config", Reason: "is not a JSON object"},
		projtest.Refusal{Raw: `{"source":"/orders"} {"token":"` + secret + `"}`, Field: "config", Reason: "has data after the JSON object"},
		projtest.Refusal{Raw: `{"source":"/orders","token":"` + strings.Repeat("a", cloudevents.MaxTokenBytes+1) + `"}`, Field: "config.token", Reason: "is longer than 4096 bytes"},
	)
}

// TestConfigRedactsToken: no formatting verb, container or log handler shows
// the token.
func TestConfigRedactsToken(t *testing.T) {
	c := cloudevents.Config{Source: "/orders", Structured: true, Token: secret}
	type wrapper struct {
		Name string
		Cfg  cloudevents.Config
		Ptr  *cloudevents.Config
	}
	outs := append(projtest.Printed(c, &c, wrapper{"w", c, &c}, []cloudevents.Config{c}), c.String(), fmt.Sprint(c), fmt.Sprintln(c))
	for _, out := range append(outs, projtest.Logged(c)...) {
		if strings.Contains(out, secret) {
			t.Errorf("output shows the token: %s", out)
		}
	}
	if got := fmt.Sprintf("%+v", c); !strings.Contains(got, "/orders") || !strings.Contains(got, "[redacted]") {
		t.Errorf("%%+v = %s: want the source and [redacted]", got)
	}
}

// TestRegisterValidatesConfig: a worker refuses a registration whose config
// is bad, naming the key, and stores a good one.
func TestRegisterValidatesConfig(t *testing.T) {
	projtest.RegisterValidates(t, cloudevents.New(), registration(""),
		`{"token":"`+secret+`"}`, "config.source", `{"source":"/orders","token":"`+secret+`"}`)
}

// FuzzParseConfig: a registration's config is outside input (see
// projtest.ConfigFuzz). Errors may quote the source, which is not a
// secret.
func FuzzParseConfig(f *testing.F) {
	projtest.ConfigFuzz[cloudevents.Config]{
		Parse: cloudevents.ParseConfig,
		Secrets: func(raw []byte) (secrets, quoted []string) {
			for _, s := range projtest.Strings(raw, "token") {
				if len(s) >= 8 {
					secrets = append(secrets, s)
				}
			}
			return secrets, projtest.Strings(raw, "source")
		},
		Printed: func(c cloudevents.Config) []string {
			if len(c.Token) < 8 || strings.Contains(c.Source, c.Token) {
				return nil
			}
			return []string{c.Token}
		},
	}.Fuzz(f,
		`{"source":"https://shop.example/orders","token":"tok-0123456789abcdef"}`, `{"source":"/orders","structured":true}`,
		`{"source":"https://s.example","token":"tok 0123456789abcdef"}`, `{"source":"a b"}`, `{"source":""}`, `{}`,
		`{"source":"x","token":"tok-0123456789\u0000abcdef"}`, `{"source":1}`, `{"sorce":"x"}`, ``, `null`, `[]`)
}
