package a2a_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

const (
	token       = "tok-0f3a9c-notification"
	credentials = "cr3d-eyJhbGciOi"
)

func TestParseConfig(t *testing.T) {
	good := []struct {
		raw  string
		want a2a.Config
	}{
		{``, a2a.Config{}},
		{`{}`, a2a.Config{}},
		{`{"token":"` + token + `"}`, a2a.Config{Token: token}},
		{`{"auth_scheme":"Bearer","credentials":"` + credentials + `","version":"1.0"}`, a2a.Config{AuthScheme: "Bearer", Credentials: credentials, Version: "1.0"}},
		{`{"auth_scheme":"Basic","credentials":"dXNlcjpwYXNz","token":"a b","version":"0.3"}`, a2a.Config{AuthScheme: "Basic", Credentials: "dXNlcjpwYXNz", Token: "a b", Version: "0.3"}},
	}
	for _, g := range good {
		got, err := a2a.ParseConfig(push.Config(g.raw))
		if err != nil {
			t.Errorf("ParseConfig(%s): %v", g.raw, err)
			continue
		}
		if got != g.want {
			t.Errorf("ParseConfig(%s) = %#v, want %#v", g.raw, got, g.want)
		}
	}

	bad := []struct{ raw, field, reason string }{
		{`{"version":"0.2"}`, "config.version", `"0.2" must be "1.0" (the default) or "0.3"`},
		{`{"version":1.0}`, "config.version", "must be a JSON string, not number"},
		{`{"credentials":"` + credentials + `"}`, "config.auth_scheme", "is missing"},
		{`{"auth_scheme":"Bearer"}`, "config.credentials", "is missing"},
		{`{"auth_scheme":"Bear er","credentials":"` + credentials + `"}`, "config.auth_scheme", "at byte 4"},
		{`{"auth_scheme":"Bearer","credentials":"` + credentials + `\r\nX-Evil: 1"}`, "config.credentials", "not visible ASCII at byte 15"},
		{`{"auth_scheme":"Bearer","credentials":" ` + credentials + `"}`, "config.credentials", "starts or ends with a space"},
		{`{"token":"` + token + `\u00e9"}`, "config.token", "not visible ASCII"},
		{`{"token":"` + strings.Repeat("t", a2a.MaxSecretBytes+1) + `"}`, "config.token", "is longer than 4096 bytes"},
		{`{"Token2":"` + token + `"}`, "config", `unknown key "Token2"`},
		{`"` + token + `"`, "config", "is not a JSON object"},
	}
	for _, b := range bad {
		_, err := a2a.ParseConfig(push.Config(b.raw))
		var inv *journal.InvalidError
		if !errors.As(err, &inv) || !errors.Is(err, journal.ErrInvalid) {
			t.Errorf("ParseConfig(%.60s): error %v, want an *journal.InvalidError", b.raw, err)
			continue
		}
		if inv.Field != b.field || !strings.Contains(inv.Reason, b.reason) {
			t.Errorf("ParseConfig(%.60s): %v, want field %q and a reason with %q", b.raw, err, b.field, b.reason)
		}
		if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), credentials) {
			t.Errorf("ParseConfig(%.60s): the error repeats a secret: %v", b.raw, err)
		}
	}
}

// TestConfigRedactsSecrets: no formatting verb, container or log handler
// shows the token or the credentials.
func TestConfigRedactsSecrets(t *testing.T) {
	c := a2a.Config{Token: token, AuthScheme: "Bearer", Credentials: credentials, Version: "0.3"}
	type wrapper struct {
		Cfg a2a.Config
		Ptr *a2a.Config
	}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		outs = append(outs, fmt.Sprintf(verb, c), fmt.Sprintf(verb, &c), fmt.Sprintf(verb, wrapper{c, &c}),
			fmt.Sprintf(verb, map[string]a2a.Config{"k": c}))
	}
	outs = append(outs, c.String(), c.GoString(), fmt.Sprint(c))
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var b bytes.Buffer
		slog.New(h(&b)).Info("registered", "config", c)
		outs = append(outs, b.String())
	}
	for _, out := range outs {
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
	store := memory.New()
	w, err := push.NewWorker(store, store, projtest.Transport(t), a2a.New())
	if err != nil {
		t.Fatal(err)
	}
	reg := push.Registration{Stream: "task/1", ID: "push-1", URL: "https://client.example/hook",
		Config: push.Config(`{"auth_scheme":"Bearer","token":"` + token + `"}`)}
	_, err = w.Register(context.Background(), reg)
	var inv *journal.InvalidError
	if !errors.As(err, &inv) || inv.Field != "config.credentials" {
		t.Fatalf("Register with a scheme and no credentials: %v, want an invalid config.credentials", err)
	}
	reg.Config = push.Config(`{"auth_scheme":"Bearer","credentials":"` + credentials + `","token":"` + token + `"}`)
	if _, err := w.Register(context.Background(), reg); err != nil {
		t.Fatalf("Register with a good config: %v", err)
	}
}
