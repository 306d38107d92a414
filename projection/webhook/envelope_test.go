package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// A real worker delivers the same records to two loopback receivers, one
// registered without the envelope and one with it. Each receiver verifies
// every signature with the Standard Webhooks library over the bytes it
// got; the test pins those bytes, the Content-Type and herald's headers.
func TestEnvelopeOffAndOnVerifyWithTheLibrary(t *testing.T) {
	ctx := context.Background()
	appended := time.Date(2026, 3, 15, 11, 0, 0, 123456789, time.FixedZone("CET", 3600))
	db := memory.New(memory.WithClock(func() time.Time { return appended }))
	if _, err := db.Append(ctx, "order/1001",
		journal.Entry{ID: "order-1001-created", Kind: "order.created", Payload: []byte("{\"id\": 1001,\n \"total\": 42}\n")},
		journal.Entry{ID: "order-1001-invoice", Kind: "order.invoice", ContentType: "text/csv", Payload: []byte("id,total\n1001,42\n")},
	); err != nil {
		t.Fatal(err)
	}
	raw, env := newReceiver(t, secretA), newReceiver(t, secretA)
	w := projtest.Worker(t, db, New(),
		push.Registration{Stream: "order/1001", ID: "raw", Namespace: Namespace, URL: raw.URL, Config: config(t, false, secretA)},
		push.Registration{Stream: "order/1001", ID: "envelope", Namespace: Namespace, URL: env.URL, Config: config(t, true, secretA)})
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
	check("without the envelope", raw.Received(), []want{
		{"application/json", "order.created", "1", "{\"id\": 1001,\n \"total\": 42}\n"},
		{"text/csv", "order.invoice", "2", "id,total\n1001,42\n"},
	})
	check("with the envelope", env.Received(), []want{
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
	reg := registration("https://hooks.example/x", config(f, true, secretA))
	f.Fuzz(func(t *testing.T, kind, ct string, payload []byte, nanos int64) {
		rec, ok := projtest.Record("s", journal.Entry{ID: "e", Kind: kind, ContentType: ct, Payload: payload})
		if !ok {
			return
		}
		at := time.Unix(0, nanos)
		rec.AppendedAt = at
		msg := projtest.One(t, p, rec, reg)
		if !json.Valid(msg.Body) || msg.ContentType != "application/json" {
			t.Fatalf("envelope %q (%s) is not JSON", msg.Body, msg.ContentType)
		}
		var got struct {
			Type        string          `json:"type"`
			Timestamp   string          `json:"timestamp"`
			Data        json.RawMessage `json:"data"`
			ContentType string          `json:"content_type"`
			DataBase64  []byte          `json:"data_base64"`
		}
		dec := json.NewDecoder(bytes.NewReader(msg.Body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("envelope %s: %v", msg.Body, err)
		}
		if got.Type != rec.Kind {
			t.Fatalf("type %q, want %q", got.Type, rec.Kind)
		}
		ts, err := time.Parse(time.RFC3339Nano, got.Timestamp)
		if err != nil || !ts.Equal(at.Truncate(time.Microsecond)) || len(got.Timestamp) != len(TimestampFormat) {
			t.Fatalf("timestamp %q (%v), want %v in %s", got.Timestamp, err, at.Truncate(time.Microsecond), TimestampFormat)
		}
		if got.Data != nil {
			var want, have bytes.Buffer
			if json.Compact(&want, rec.Payload) != nil || json.Compact(&have, got.Data) != nil || want.String() != have.String() {
				t.Fatalf("data %s, want the payload %q", got.Data, rec.Payload)
			}
			return
		}
		if got.ContentType != rec.ContentType || !bytes.Equal(got.DataBase64, rec.Payload) {
			t.Fatalf("content_type %q, data_base64 %q; want %q, %q", got.ContentType, got.DataBase64, rec.ContentType, rec.Payload)
		}
	})
}

// The signature covers the envelope, the bytes sent: recomputed by hand
// over id.timestamp.envelope, as the specification defines it.
func TestEnvelopeIsWhatIsSigned(t *testing.T) {
	at := time.Unix(1767323045, 0)
	rec := journal.Record{Stream: "tenant/42", Seq: 7, ID: "evt_1", Kind: "order.paid", ContentType: "application/json",
		Payload: []byte(`{"n":1}`), AppendedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	msg := projtest.One(t, New(), rec, registration("https://hooks.example/x", config(t, true, secretA)))
	body := `{"type":"order.paid","timestamp":"2026-01-02T03:04:05.000000Z","data":{"n":1}}`
	if string(msg.Body) != body {
		t.Fatalf("body %s\nwant %s", msg.Body, body)
	}
	req, err := projtest.NewRequest(t, "https://hooks.example/x", msg, at)
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

// An operator subscribes to herald/events on the webhook namespace, once
// without the envelope and once with it. A receiver answers 410 and is
// parked; the next sweep delivers the parked event to both subscribers,
// verified by the Standard Webhooks library, and each can tell what it got
// from the Herald-Kind header and from the body alone.
func TestParkedEventReachesAWebhookReceiverWithItsKind(t *testing.T) {
	ctx := context.Background()
	goneSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "this endpoint was deleted", http.StatusGone)
	}))
	defer goneSrv.Close()
	raw, env := newReceiver(t, secretA), newReceiver(t, secretA)

	db := memory.New()
	if _, err := db.Append(ctx, "orders", journal.Entry{ID: "o-1", Kind: "order.created", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	w := projtest.Worker(t, db, New(),
		push.Registration{Stream: "orders", ID: "gone", Namespace: Namespace, URL: goneSrv.URL, Config: config(t, false, secretA)},
		push.Registration{Stream: store.EventsStream, ID: "ops", Namespace: Namespace, URL: raw.URL, Config: config(t, false, secretA)},
		push.Registration{Stream: store.EventsStream, ID: "ops-envelope", Namespace: Namespace, URL: env.URL, Config: config(t, true, secretA)})
	now := time.Now() // the library checks webhook-timestamp against its clock
	if rep, err := w.RunOnce(ctx, now, 10); err != nil || rep.Parked != 1 {
		t.Fatalf("first sweep: %+v, %v; want the 410 parked", rep, err)
	}
	if rep, err := w.RunOnce(ctx, now.Add(time.Second), 10); err != nil || rep.Deliveries != 2 {
		t.Fatalf("second sweep: %+v, %v; want the event delivered to both subscribers", rep, err)
	}

	for name, rc := range map[string]*receiver{"without the envelope": raw, "with the envelope": env} {
		got := rc.Received()
		if len(got) != 1 {
			t.Fatalf("%s: %d deliveries, want 1", name, len(got))
		}
		h := got[0].header
		if h.Get(HeaderKind) != store.KindParked || h.Get(HeaderStream) != store.EventsStream || h.Get(HeaderSeq) != "1" {
			t.Errorf("%s: headers kind %q, stream %q, seq %q", name, h.Get(HeaderKind), h.Get(HeaderStream), h.Get(HeaderSeq))
		}
		ev := got[0].body
		if rc == env {
			var e struct {
				Type      string          `json:"type"`
				Timestamp string          `json:"timestamp"`
				Data      json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(got[0].body, &e); err != nil || e.Type != store.KindParked || e.Timestamp == "" {
				t.Fatalf("%s: body %s (%v), want the envelope of a parked event", name, got[0].body, err)
			}
			ev = e.Data
		}
		var op store.OperationalEvent
		if err := json.Unmarshal(ev, &op); err != nil || op.Kind != store.KindParked || op.Stream != "orders" || op.Registration != "gone" {
			t.Errorf("%s: event %s (%v), want kind %s for orders/gone", name, ev, err, store.KindParked)
		}
	}
}
