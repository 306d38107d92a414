package cloudevents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
)

// FuzzParseConfig: a registration's config is outside input. Parsing
// never panics; a refusal wraps journal.ErrInvalid and never repeats the
// token; an accepted config prints no token under any fmt verb.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{"source":"https://shop.example/orders","token":"tok-0123456789abcdef"}`, `{"source":"/orders","structured":true}`,
		`{"source":"https://s.example","token":"tok 0123456789abcdef"}`, `{"source":"a b"}`, `{"source":""}`, `{}`,
		`{"source":"x","token":"tok-0123456789\u0000abcdef"}`, `{"source":1}`, `{"sorce":"x"}`, ``, `null`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := cloudevents.ParseConfig(push.Config(raw))
		var obj struct {
			Source string `json:"source"`
			Token  string `json:"token"`
		}
		_ = json.Unmarshal(raw, &obj)
		if err != nil {
			if !errors.Is(err, journal.ErrInvalid) {
				t.Fatalf("ParseConfig: %v does not wrap journal.ErrInvalid", err)
			}
			// The source and an unknown key (not secrets) may be quoted, and
			// may happen to hold the token's bytes: only a token found
			// outside them is a leak.
			said := strings.ReplaceAll(projtest.WithoutUnknownKey(err.Error()), obj.Source, "")
			if len(obj.Token) >= 8 && strings.Contains(said, obj.Token) {
				t.Fatalf("ParseConfig's error %q repeats the token", err)
			}
			return
		}
		printed := fmt.Sprintf("%v %+v %#v %s %q", c, c, c, c, c)
		if len(c.Token) >= 8 && !strings.Contains(c.Source, c.Token) && strings.Contains(printed, c.Token) {
			t.Fatalf("a fmt verb prints the token: %s", printed)
		}
	})
}

// FuzzMessages: a record's content type and payload are what the
// application appended (and the journal accepted: only such records reach
// a projection). Encoding never panics; a record that makes no valid
// CloudEvent is refused with journal.ErrInvalid, as Messages documents; an
// event in structured mode is a JSON object whose id is the record's.
func FuzzMessages(f *testing.F) {
	for _, seed := range []struct {
		ct      string
		payload string
	}{
		{"application/json", `{"total":42}`}, {"text/plain", "hello"}, {"image/png", "\x89PNG\r\n"},
		{"application/cloudevents+json", `{"specversion":"1.0"}`}, {"text/plain; charset=utf-8", "\xff\xfe"},
		{"application/json; charset=\"", `{}`}, {"", `[]`}, {"a/b/c", "x"}, {"text/json", `"s"`},
	} {
		f.Add(seed.ct, []byte(seed.payload), false)
		f.Add(seed.ct, []byte(seed.payload), true)
	}
	p := cloudevents.New()
	f.Fuzz(func(t *testing.T, ct string, payload []byte, structured bool) {
		raw, err := json.Marshal(cloudevents.Config{Source: "https://shop.example/orders", Structured: structured, Token: "tok-0123456789abcdef"})
		if err != nil {
			t.Fatal(err)
		}
		reg := push.Registration{Stream: "orders/1", ID: "sink", Namespace: cloudevents.Namespace, URL: "https://sink.example/", Config: raw}
		entries, err := journal.ValidateEntries("orders/1", []journal.Entry{{ID: "evt-1", Kind: "order.created", ContentType: ct, Payload: payload}}, 0)
		if err != nil {
			return // the journal refuses it: no projection ever sees it
		}
		e := entries[0]
		rec := journal.Record{Stream: "orders/1", Seq: 1, ID: e.ID, Kind: e.Kind, ContentType: e.ContentType, Payload: e.Payload}
		msgs, err := p.Messages(context.Background(), rec, reg)
		if err != nil {
			if !errors.Is(err, journal.ErrInvalid) {
				t.Fatalf("Messages(%q, %q): %v does not wrap journal.ErrInvalid", ct, payload, err)
			}
			return
		}
		if len(msgs) != 1 || msgs[0].ID != rec.ID {
			t.Fatalf("Messages(%q, %q) = %+v", ct, payload, msgs)
		}
		m := msgs[0]
		if m.Header.Get("Authorization") != "Bearer tok-0123456789abcdef" {
			t.Fatalf("Messages(%q, %q): Authorization %q", ct, payload, m.Header.Get("Authorization"))
		}
		if structured {
			var ev map[string]any
			if err := json.Unmarshal(m.Body, &ev); err != nil || ev["id"] != rec.ID {
				t.Fatalf("Messages(%q, %q) structured body %q: %v", ct, payload, m.Body, err)
			}
		} else if m.Header.Get("Ce-Id") != rec.ID {
			t.Fatalf("Messages(%q, %q): ce-id %q", ct, payload, m.Header.Get("Ce-Id"))
		}
	})
}
