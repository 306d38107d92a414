package cloudevents_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
)

// goldenRecord is written for these tests: a small push event with
// non-ASCII text and a time with nanoseconds.
var goldenRecord = journal.Record{
	Stream:      "repo/octo-org/hello-world",
	Seq:         7,
	ID:          "delivery-7f3c2a10-5e1b",
	Kind:        "com.github.push",
	ContentType: "application/json",
	Payload:     []byte(`{"ref":"refs/heads/main","commits":[{"id":"a1b2c3d","message":"Fix the café menu ☕"}],"forced":false}`),
	AppendedAt:  time.Date(2026, 3, 15, 11, 0, 7, 123456789, time.UTC),
}

func registration(cfg string) push.Registration {
	return push.Registration{Stream: goldenRecord.Stream, ID: "sink", Namespace: cloudevents.Namespace,
		URL: "https://events.example/in", Config: push.Config(cfg)}
}

var goldenConfigs = []struct{ name, config string }{
	{"binary", `{"source":"https://github.com/octo-org/hello-world","token":"golden-token-not-a-secret"}`},
	{"structured", `{"source":"https://github.com/octo-org/hello-world","structured":true,"token":"golden-token-not-a-secret"}`},
}

// TestGolden pins the exact headers and body of one record in both content
// modes. Run with -update to rewrite the files after an intended change.
func TestGolden(t *testing.T) {
	for _, c := range goldenConfigs {
		t.Run(c.name, func(t *testing.T) {
			msg := projtest.One(t, cloudevents.New(), goldenRecord, registration(c.config))
			projtest.Golden(t, "cloudevents/"+c.name+".http", projtest.Render(t, registration(c.config).URL, msg, time.Time{}))
		})
	}
}

// TestMessagesArePure: the same record and registration give byte-identical
// messages, call after call, whatever the location of the record's time;
// the message id is the record id.
func TestMessagesArePure(t *testing.T) {
	elsewhere := goldenRecord
	elsewhere.AppendedAt = goldenRecord.AppendedAt.In(time.FixedZone("UTC+9", 9*3600))
	for _, cfg := range []string{`{"source":"/orders","token":"t0k3n"}`, `{"source":"/orders","structured":true}`} {
		projtest.Pure(t, cloudevents.New(), registration(cfg), goldenRecord, elsewhere)
	}
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
		rec, ok := projtest.Record("orders/1", journal.Entry{ID: "evt-1", Kind: "order.created", ContentType: ct, Payload: payload})
		if !ok {
			return
		}
		msgs, refused := projtest.Messages(t, p, rec, reg)
		if refused {
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

// TestTextJSONPayloadThatIsNotJSON: the journal checks JSON payloads only
// for application/json and +json types, so a text/json record may hold any
// text; sdk-go embeds text/json as a JSON value in structured mode, so such
// a payload must travel otherwise (as data_base64) or be refused as
// invalid, never fail to encode.
func TestTextJSONPayloadThatIsNotJSON(t *testing.T) {
	rec, ok := projtest.Record("orders/1", journal.Entry{ID: "evt-1", Kind: "k", ContentType: "text/json", Payload: []byte("not json")})
	if !ok {
		t.Fatal("the journal refuses the record, so no projection sees it")
	}
	msgs, refused := projtest.Messages(t, cloudevents.New(), rec, registration(`{"source":"https://shop.example/orders","structured":true}`))
	t.Logf("messages %d, refused %t", len(msgs), refused)
}

// BenchmarkMessages measures one record (the golden push event, about
// 100 bytes of JSON) projected in each content mode, the config cached.
func BenchmarkMessages(b *testing.B) {
	for _, mode := range goldenConfigs {
		projtest.BenchMessages(b, mode.name, cloudevents.New(), goldenRecord, registration(mode.config))
	}
}
