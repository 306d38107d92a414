package cloudevents_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

const secret = "s3cr3t-bearer-value"

func TestParseConfig(t *testing.T) {
	good := []struct {
		raw  string
		want cloudevents.Config
	}{
		{`{"source":"https://shop.example/orders"}`, cloudevents.Config{Source: "https://shop.example/orders"}},
		{`{"source":"/orders","structured":true,"token":"` + secret + `"}`, cloudevents.Config{Source: "/orders", Structured: true, Token: secret}},
		{`{"source":"urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66","structured":false}`, cloudevents.Config{Source: "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"}},
	}
	for _, g := range good {
		got, err := cloudevents.ParseConfig(push.Config(g.raw))
		if err != nil {
			t.Errorf("ParseConfig(%s): %v", g.raw, err)
			continue
		}
		if got != g.want {
			t.Errorf("ParseConfig(%s) = %+v, want %+v", g.raw, got, g.want)
		}
	}

	bad := []struct{ raw, field, reason string }{
		{``, "config.source", "is missing"},
		{`{}`, "config.source", "is missing"},
		{`{"source":""}`, "config.source", "is missing"},
		{`{"source":"https://shop.example/my orders"}`, "config.source", "space or control character at byte 23"},
		{`{"source":"http://[::1"}`, "config.source", "is not a URI-reference"},
		{`{"source":"/orders","token":"two words` + secret + `"}`, "config.token", "not visible ASCII at byte 3"},
		{`{"source":"/orders","token":"` + secret + "\\u00e9" + `"}`, "config.token", "not visible ASCII"},
		{`{"source":"/orders","tokn":"` + secret + `"}`, "config", `unknown key "tokn"`},
		{`{"source":"/orders","structured":"yes"}`, "config.structured", "must be a JSON boolean, not string"},
		{`{"source":42}`, "config.source", "must be a JSON string, not number"},
		{`["` + secret + `"]`, "config", "is not a JSON object"},
		{`{"source":"/orders"} {"token":"` + secret + `"}`, "config", "has data after the JSON object"},
		{`{"source":"/orders","token":"` + strings.Repeat("a", cloudevents.MaxTokenBytes+1) + `"}`, "config.token", "is longer than 4096 bytes"},
	}
	for _, b := range bad {
		_, err := cloudevents.ParseConfig(push.Config(b.raw))
		var inv *journal.InvalidError
		if !errors.As(err, &inv) || !errors.Is(err, journal.ErrInvalid) {
			t.Errorf("ParseConfig(%.60s): error %v, want an *journal.InvalidError", b.raw, err)
			continue
		}
		if inv.Field != b.field || !strings.Contains(inv.Reason, b.reason) {
			t.Errorf("ParseConfig(%.60s): %v, want field %q and a reason with %q", b.raw, err, b.field, b.reason)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("ParseConfig(%.60s): the error repeats the token: %v", b.raw, err)
		}
	}
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
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		outs = append(outs,
			fmt.Sprintf(verb, c), fmt.Sprintf(verb, &c),
			fmt.Sprintf(verb, wrapper{"w", c, &c}), fmt.Sprintf(verb, []cloudevents.Config{c}))
	}
	outs = append(outs, c.String(), c.GoString(), fmt.Sprint(c), fmt.Sprintln(c))
	for _, handler := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var b bytes.Buffer
		slog.New(handler(&b)).Info("registered", "config", c)
		outs = append(outs, b.String())
	}
	for _, out := range outs {
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
	store := memory.New()
	w, err := push.NewWorker(store, store, nopTransport{}, cloudevents.New())
	if err != nil {
		t.Fatal(err)
	}
	reg := registration(`{"token":"` + secret + `"}`)
	_, err = w.Register(context.Background(), reg)
	var inv *journal.InvalidError
	if !errors.As(err, &inv) || inv.Field != "config.source" {
		t.Fatalf("Register with no source: %v, want an invalid config.source", err)
	}
	reg.Config = push.Config(`{"source":"/orders","token":"` + secret + `"}`)
	if _, err := w.Register(context.Background(), reg); err != nil {
		t.Fatalf("Register with a good config: %v", err)
	}
}

type nopTransport struct{}

func (nopTransport) Deliver(context.Context, push.Registration, push.Message, time.Time) (push.Outcome, error) {
	return push.Outcome{Verdict: push.Accepted, Status: 204}, nil
}
