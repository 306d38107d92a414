package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

func envelopeConfig(t testing.TB, secrets ...string) push.Config {
	t.Helper()
	raw, err := Config{Secrets: secrets, Envelope: true}.Encode()
	if err != nil {
		t.Fatalf("encode config: %v", err)
	}
	return raw
}

// A real worker delivers the same records to two loopback receivers, one
// registered without the envelope and one with it. Each receiver verifies
// every signature with the Standard Webhooks library over the bytes it
// got; the test pins those bytes, the Content-Type and herald's headers.
func TestEnvelopeOffAndOnVerifyWithTheLibrary(t *testing.T) {
	ctx := context.Background()
	appended := time.Date(2026, 3, 15, 11, 0, 0, 123456789, time.FixedZone("CET", 3600))
	store := memory.New(memory.WithClock(func() time.Time { return appended }))
	if _, err := store.Append(ctx, "order/1001",
		journal.Entry{ID: "order-1001-created", Kind: "order.created", Payload: []byte("{\"id\": 1001,\n \"total\": 42}\n")},
		journal.Entry{ID: "order-1001-invoice", Kind: "order.invoice", ContentType: "text/csv", Payload: []byte("id,total\n1001,42\n")},
	); err != nil {
		t.Fatal(err)
	}
	raw, env := newReceiver(t, secretA), newReceiver(t, secretA)
	w, err := push.NewWorker(store, store, projtest.Transport(t), New())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []push.Registration{
		{Stream: "order/1001", ID: "raw", Namespace: Namespace, URL: raw.srv.URL, Config: config(t, secretA)},
		{Stream: "order/1001", ID: "envelope", Namespace: Namespace, URL: env.srv.URL, Config: envelopeConfig(t, secretA)},
	} {
		if _, err := w.Register(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := w.RunOnce(ctx, time.Now(), 10) // the library checks webhook-timestamp against its clock
	if err != nil || rep.Deliveries != 4 || rep.Retries+rep.Parked != 0 {
		t.Fatalf("sweep: %+v, %v; want 4 verified deliveries", rep, err)
	}

	type want struct{ contentType, kind, seq, body string }
	check := func(name string, got []delivery, wants []want) {
		t.Helper()
		if len(got) != len(wants) {
			t.Fatalf("%s: %d deliveries, want %d", name, len(got), len(wants))
		}
		for i, w := range wants {
			h := got[i].header
			if string(got[i].body) != w.body {
				t.Errorf("%s #%d: body\n%s\nwant\n%s", name, i+1, got[i].body, w.body)
			}
			for k, v := range map[string]string{"Content-Type": w.contentType, HeaderKind: w.kind, HeaderStream: "order/1001", HeaderSeq: w.seq} {
				if h.Get(k) != v {
					t.Errorf("%s #%d: %s %q, want %q", name, i+1, k, h.Get(k), v)
				}
			}
		}
	}
	check("without the envelope", raw.received(), []want{
		{"application/json", "order.created", "1", "{\"id\": 1001,\n \"total\": 42}\n"},
		{"text/csv", "order.invoice", "2", "id,total\n1001,42\n"},
	})
	check("with the envelope", env.received(), []want{
		{"application/json", "order.created", "1",
			"{\"type\":\"order.created\",\"timestamp\":\"2026-03-15T10:00:00.123456Z\",\"data\":{\"id\": 1001,\n \"total\": 42}}"},
		{"application/json", "order.invoice", "2",
			`{"type":"order.invoice","timestamp":"2026-03-15T10:00:00.123456Z","content_type":"text/csv","data_base64":"` +
				base64.StdEncoding.EncodeToString([]byte("id,total\n1001,42\n")) + `"}`},
	})
}

// FuzzEnvelope: for every record journal accepts, the envelope is valid
// JSON whose type is the kind, whose timestamp parses back to the
// appended-at to the microsecond, and whose data (JSON) or data_base64 and
// content_type (anything else) give the payload back.
func FuzzEnvelope(f *testing.F) {
	f.Add("order.paid", "application/json", []byte(`{"a":[1,"<b>"]}`), int64(1773572400123456789))
	f.Add("k", "application/activity+json; charset=utf-8", []byte(" \"text\" \n"), int64(0))
	f.Add(`say"hi"`, "text/plain; charset=utf-8", []byte("Zoë\r\n"), int64(-1))
	f.Add("blob", "application/octet-stream", []byte{0, 0xff, '"', '\\'}, int64(1))
	f.Add("empty", "text/plain", []byte{}, int64(2))
	p := New()
	cfg := envelopeConfig(f, secretA)
	f.Fuzz(func(t *testing.T, kind, ct string, payload []byte, nanos int64) {
		entries, err := journal.ValidateEntries("s", []journal.Entry{{ID: "e", Kind: kind, ContentType: ct, Payload: payload}}, 0)
		if err != nil {
			return // not a record
		}
		e := entries[0]
		at := time.Unix(0, nanos)
		rec := journal.Record{Stream: "s", Seq: 1, ID: e.ID, Kind: e.Kind, ContentType: e.ContentType, Payload: e.Payload, AppendedAt: at}
		msgs, err := p.Messages(context.Background(), rec, registration("https://hooks.example/x", cfg))
		if err != nil || len(msgs) != 1 {
			t.Fatalf("Messages: %v, %d messages", err, len(msgs))
		}
		body := msgs[0].Body
		if !json.Valid(body) || msgs[0].ContentType != "application/json" {
			t.Fatalf("envelope %q (%s) is not JSON", body, msgs[0].ContentType)
		}
		var got struct {
			Type        string          `json:"type"`
			Timestamp   string          `json:"timestamp"`
			Data        json.RawMessage `json:"data"`
			ContentType string          `json:"content_type"`
			DataBase64  []byte          `json:"data_base64"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("envelope %s: %v", body, err)
		}
		if got.Type != e.Kind {
			t.Fatalf("type %q, want %q", got.Type, e.Kind)
		}
		ts, err := time.Parse(time.RFC3339Nano, got.Timestamp)
		if err != nil || !ts.Equal(at.Truncate(time.Microsecond)) || len(got.Timestamp) != len(TimestampFormat) {
			t.Fatalf("timestamp %q (%v), want %v in %s", got.Timestamp, err, at.Truncate(time.Microsecond), TimestampFormat)
		}
		if got.Data != nil {
			var want, have bytes.Buffer
			if json.Compact(&want, e.Payload) != nil || json.Compact(&have, got.Data) != nil || want.String() != have.String() {
				t.Fatalf("data %s, want the payload %q", got.Data, e.Payload)
			}
			return
		}
		if got.ContentType != e.ContentType || !bytes.Equal(got.DataBase64, e.Payload) {
			t.Fatalf("content_type %q, data_base64 %q; want %q, %q", got.ContentType, got.DataBase64, e.ContentType, e.Payload)
		}
	})
}

// The signature covers the envelope, the bytes sent: recomputed by hand
// over id.timestamp.envelope, as the specification defines it.
func TestEnvelopeIsWhatIsSigned(t *testing.T) {
	at := time.Unix(1767323045, 0)
	rec := journal.Record{Stream: "tenant/42", Seq: 7, ID: "evt_1", Kind: "order.paid", ContentType: "application/json",
		Payload: []byte(`{"n":1}`), AppendedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	msgs, err := New().Messages(context.Background(), rec, registration("https://hooks.example/x", envelopeConfig(t, secretA)))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"type":"order.paid","timestamp":"2026-01-02T03:04:05.000000Z","data":{"n":1}}`
	if string(msgs[0].Body) != body {
		t.Fatalf("body %s\nwant %s", msgs[0].Body, body)
	}
	req, err := projtest.NewRequest(t, "https://hooks.example/x", msgs[0], at)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := req.Header.Get("webhook-signature"), specSignature(t, secretA, "evt_1.1767323045."+body); got != want {
		t.Fatalf("webhook-signature %q, want %q", got, want)
	}
	if req.Header.Get("Content-Type") != "application/json" || req.Header.Get(HeaderSeq) != "7" {
		t.Fatalf("headers %v", req.Header)
	}
}
