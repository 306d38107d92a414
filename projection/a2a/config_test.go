package a2a_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
)

const (
	token       = "tok-0f3a9c-notification"
	credentials = "cr3d-eyJhbGciOi"
)

func TestParseConfig(t *testing.T) {
	for _, g := range []struct {
		raw  string
		want a2a.Config
	}{
		{``, a2a.Config{}},
		{`{}`, a2a.Config{}},
		{`{"token":"` + token + `"}`, a2a.Config{Token: token}},
		{`{"auth_scheme":"Bearer","credentials":"` + credentials + `","version":"1.0"}`, a2a.Config{AuthScheme: "Bearer", Credentials: credentials, Version: "1.0"}},
		{`{"auth_scheme":"Basic","credentials":"dXNlcjpwYXNz","token":"a b","version":"0.3"}`, a2a.Config{AuthScheme: "Basic", Credentials: "dXNlcjpwYXNz", Token: "a b", Version: "0.3"}},
	} {
		if got, err := a2a.ParseConfig(push.Config(g.raw)); err != nil || !reflect.DeepEqual(got, g.want) {
			t.Errorf("ParseConfig(%s) = %#v, %v; want %#v", g.raw, got, err, g.want)
		}
	}
	projtest.Refuses(t, a2a.ParseConfig, a2a.New(), []string{token, credentials},
		projtest.Refusal{Raw: `{"version":"0.2"}`, Field: "config.version", Reason: `"0.2" must be "1.0" (the default) or "0.3"`},
		projtest.Refusal{Raw: `{"version":1.0}`, Field: "config.version", Reason: "must be a JSON string, not number"},
		projtest.Refusal{Raw: `{"credentials":"` + credentials + `"}`, Field: "config.auth_scheme", Reason: "is missing"},
		projtest.Refusal{Raw: `{"auth_scheme":"Bearer"}`, Field: "config.credentials", Reason: "is missing"},
		projtest.Refusal{Raw: `{"auth_scheme":"Bear er","credentials":"` + credentials + `"}`, Field: "config.auth_scheme", Reason: "at byte 4"},
		projtest.Refusal{Raw: `{"auth_scheme":"Bearer","credentials":"` + credentials + `\r\nX-Evil: 1"}`, Field: "config.credentials", Reason: "not visible ASCII at byte 15"},
		projtest.Refusal{Raw: `{"auth_scheme":"Bearer","credentials":" ` + credentials + `"}`, Field: "config.credentials", Reason: "starts or ends with a space"},
		projtest.Refusal{Raw: `{"token":"` + token + `\u00e9"}`, Field: "config.token", Reason: "not visible ASCII"},
		projtest.Refusal{Raw: `{"token":"` + strings.Repeat("t", a2a.MaxSecretBytes+1) + `"}`, Field: "config.token", Reason: "is longer than 4096 bytes"},
		projtest.Refusal{Raw: `{"Token2":"` + token + `"}`, Field: "config", Reason: `unknown key "Token2"`},
		projtest.Refusal{Raw: `"` + token + `"`, Field: "config", Reason: "is not a JSON object"},
	)
}

// TestConfigRedactsSecrets: no formatting verb, container or log handler
// shows the token or the credentials.
func TestConfigRedactsSecrets(t *testing.T) {
	c := a2a.Config{Token: token, AuthScheme: "Bearer", Credentials: credentials, Version: "0.3"}
	type wrapper struct {
		Cfg a2a.Config
		Ptr *a2a.Config
	}
	outs := append(projtest.Printed(c, &c, wrapper{c, &c}, map[string]a2a.Config{"k": c}), c.String(), fmt.Sprint(c))
	for _, out := range append(outs, projtest.Logged(c)...) {
		if strings.Contains(out, token) || strings.Contains(out, credentials) {
			t.Errorf("output shows a secret: %s", out)
		}
	}
	if got := fmt.Sprintf("%+v", c); !strings.Contains(got, "Bearer") || !strings.Contains(got, "[redacted]") || !strings.Contains(got, "0.3") {
		t.Errorf("%%+v = %s: want the scheme, the version and [redacted]", got)
	}
}

// TestRegisterValidatesConfig: a worker refuses a registration whose config
// is bad, naming the key, and stores a good one.
func TestRegisterValidatesConfig(t *testing.T) {
	projtest.RegisterValidates(t, a2a.New(), push.Registration{Stream: "task/1", ID: "push-1", URL: "https://client.example/hook"},
		`{"auth_scheme":"Bearer","token":"`+token+`"}`, "config.credentials",
		`{"auth_scheme":"Bearer","credentials":"`+credentials+`","token":"`+token+`"}`)
}

// FuzzParseConfig: an A2A push config comes from the client that asked
// for notifications, a stranger (see projtest.ConfigFuzz). Errors may
// quote version and auth_scheme, which are not secrets.
func FuzzParseConfig(f *testing.F) {
	projtest.ConfigFuzz[a2a.Config]{
		Parse: a2a.ParseConfig,
		Secrets: func(raw []byte) (secrets, quoted []string) {
			return long(projtest.Strings(raw, "token", "credentials")...), long(projtest.Strings(raw, "version", "auth_scheme")...)
		},
		Printed: func(c a2a.Config) []string { return long(c.Token, c.Credentials) },
	}.Fuzz(f,
		`{"token":"tok-0123456789abcdef"}`, `{"auth_scheme":"Bearer","credentials":"cred-0123456789abcdef"}`,
		`{"token":"tok-0123456789abcdef","version":"0.3"}`, `{"token":"tok\r\nX-Evil: 1-0123456789"}`,
		`{"auth_scheme":"Bearer"}`, `{"credentials":"cred-0123456789abcdef"}`, `{"auth_scheme":"Be arer","credentials":"c"}`,
		`{"version":"2.0"}`, `{"tokn":"x"}`, `{"token":1}`, ``, `null`, `[]`, `{} {}`)
}

// long keeps the strings of 8 bytes or more: shorter ones may be ordinary
// words of an error.
func long(ss ...string) (out []string) {
	for _, s := range ss {
		if len(s) >= 8 {
			out = append(out, s)
		}
	}
	return out
}
