package push_test

import (
	"context"
	"fmt"
	"time"

	"log/slog"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// webhookProjection sends each record's payload as it is.
type webhookProjection struct{}

func (webhookProjection) Namespace() string                { return "webhook" }
func (webhookProjection) Terminal(rec journal.Record) bool { return rec.Final }
func (webhookProjection) Messages(_ context.Context, rec journal.Record, _ push.Registration) ([]push.Message, error) {
	return []push.Message{{ID: rec.ID, ContentType: rec.ContentType, Body: rec.Payload}}, nil
}

// Append two records to a stream, register a receiver for it, and run one
// sweep at a stated instant. The receiver here is a function; in production
// it is transport.HTTP.
func Example() {
	ctx := context.Background()
	db := memory.New()

	_, err := db.Append(ctx, "order/1001",
		journal.Entry{ID: "evt-1", Kind: "order.created", Payload: []byte(`{"total":42}`)},
		journal.Entry{ID: "evt-2", Kind: "order.paid", Payload: []byte(`{"total":42}`)},
	)
	if err != nil {
		panic(err)
	}
	_, err = db.Register(ctx, push.Registration{
		Stream: "order/1001", ID: "billing", Namespace: "webhook", URL: "https://billing.example/hooks",
	})
	if err != nil {
		panic(err)
	}

	receiver := push.TransportFunc(func(_ context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		fmt.Printf("POST %s %s %s at %s\n", reg.Host(), msg.ID, msg.Body, at.Format(time.RFC3339))
		return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
	})
	w, err := push.NewWorker(db, db, receiver, webhookProjection{})
	if err != nil {
		panic(err)
	}
	report, err := w.RunOnce(ctx, time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC), 100)
	if err != nil {
		panic(err)
	}
	st, _ := db.Get(ctx, "order/1001", "billing")
	fmt.Printf("records %d, deliveries %d, cursor %d, lag %d\n", report.Records, report.Deliveries, st.NextSeq, st.Lag())
	// Output:
	// POST billing.example:443 evt-1 {"total":42} at 2026-03-15T11:00:00Z
	// POST billing.example:443 evt-2 {"total":42} at 2026-03-15T11:00:00Z
	// records 2, deliveries 2, cursor 3, lag 0
}

// A receiver's host that refuses connections: three registrations on it
// bring it down in one sweep, without an attempt charged to any; the sweeps
// before its probe instant send nothing; one probe goes through, the host
// answers, and the next sweep delivers the rest.
func ExampleHostStore() {
	ctx := context.Background()
	db := memory.New()
	t0 := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	for _, id := range []string{"a", "b", "c"} {
		_, _ = db.Append(ctx, "order/"+id, journal.Entry{ID: "evt-" + id, Kind: "order.created", Payload: []byte(`{}`)})
		_, _ = db.Register(ctx, push.Registration{Stream: "order/" + id, ID: "inbox", Namespace: "webhook", URL: "https://social.example/inbox"})
	}
	up := false
	tr := push.TransportFunc(func(_ context.Context, reg push.Registration, _ push.Message, _ time.Time) (push.Outcome, error) {
		if !up {
			return push.Outcome{Verdict: push.Transient, Reason: "dial: connection refused", HostLevel: true}, nil
		}
		return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
	})
	w, _ := push.NewWorker(db, db, tr, webhookProjection{}, push.WithMaxInFlight(1),
		push.WithLogger(slog.New(slog.DiscardHandler)))

	rep, _ := w.RunOnce(ctx, t0, 10)
	hosts, _ := db.Hosts(ctx, store.HostQuery{})
	h := hosts[0]
	fmt.Println("host failures:", rep.HostFailures, "retries:", rep.Retries, "parked:", rep.Parked)
	fmt.Println(h.Host, h.State, "holding", h.Held, "probe in", h.NextProbeAt.Sub(t0))

	rep, _ = w.RunOnce(ctx, h.NextProbeAt.Add(-time.Second), 10)
	fmt.Println("before the probe:", rep.Registrations, "claimed")
	up = true
	rep, _ = w.RunOnce(ctx, h.NextProbeAt, 10)
	fmt.Println("at the probe:", rep.Registrations, "claimed,", rep.Deliveries, "delivered")
	rep, _ = w.RunOnce(ctx, h.NextProbeAt.Add(time.Minute), 10)
	fmt.Println("released:", rep.Deliveries, "delivered")
	// Output:
	// host failures: 3 retries: 0 parked: 0
	// social.example:443 down holding 3 probe in 5s
	// before the probe: 0 claimed
	// at the probe: 1 claimed, 1 delivered
	// released: 2 delivered
}
