package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

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

	store := memory.New()
	if _, err := store.Append(ctx, "orders", journal.Entry{ID: "o-1", Kind: "order.created", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	w, err := push.NewWorker(store, store, projtest.Transport(t), New())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []push.Registration{
		{Stream: "orders", ID: "gone", Namespace: Namespace, URL: goneSrv.URL, Config: config(t, secretA)},
		{Stream: push.EventsStream, ID: "ops", Namespace: Namespace, URL: raw.srv.URL, Config: config(t, secretA)},
		{Stream: push.EventsStream, ID: "ops-envelope", Namespace: Namespace, URL: env.srv.URL, Config: envelopeConfig(t, secretA)},
	} {
		if _, err := w.Register(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now() // the library checks webhook-timestamp against its clock
	if rep, err := w.RunOnce(ctx, now, 10); err != nil || rep.Parked != 1 {
		t.Fatalf("first sweep: %+v, %v; want the 410 parked", rep, err)
	}
	if rep, err := w.RunOnce(ctx, now.Add(time.Second), 10); err != nil || rep.Deliveries != 2 {
		t.Fatalf("second sweep: %+v, %v; want the event delivered to both subscribers", rep, err)
	}

	for name, rc := range map[string]*receiver{"without the envelope": raw, "with the envelope": env} {
		got := rc.received()
		if len(got) != 1 {
			t.Fatalf("%s: %d deliveries, want 1", name, len(got))
		}
		h := got[0].header
		if h.Get(HeaderKind) != push.KindParked || h.Get(HeaderStream) != push.EventsStream || h.Get(HeaderSeq) != "1" {
			t.Errorf("%s: headers kind %q, stream %q, seq %q", name, h.Get(HeaderKind), h.Get(HeaderStream), h.Get(HeaderSeq))
		}
		ev := got[0].body
		if rc == env {
			var e struct {
				Type      string          `json:"type"`
				Timestamp string          `json:"timestamp"`
				Data      json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(got[0].body, &e); err != nil || e.Type != push.KindParked || e.Timestamp == "" {
				t.Fatalf("%s: body %s (%v), want the envelope of a parked event", name, got[0].body, err)
			}
			ev = e.Data
		}
		var op push.OperationalEvent
		if err := json.Unmarshal(ev, &op); err != nil || op.Kind != push.KindParked || op.Stream != "orders" || op.Registration != "gone" {
			t.Errorf("%s: event %s (%v), want kind %s for orders/gone", name, ev, err, push.KindParked)
		}
	}
}
