package push_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

// A receiver's host that refuses connections: three registrations on it
// bring it down in one sweep, without an attempt charged to any; the sweeps
// before its probe instant send nothing; one probe goes through, the host
// answers, and the next sweep delivers the rest.
func ExampleHostStore() {
	ctx := context.Background()
	store := memory.New()
	t0 := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	for _, id := range []string{"a", "b", "c"} {
		_, _ = store.Append(ctx, "order/"+id, journal.Entry{ID: "evt-" + id, Kind: "order.created", Payload: []byte(`{}`)})
		_, _ = store.Register(ctx, push.Registration{Stream: "order/" + id, ID: "inbox", Namespace: "webhook", URL: "https://social.example/inbox"})
	}
	up := false
	tr := push.TransportFunc(func(_ context.Context, reg push.Registration, _ push.Message, _ time.Time) (push.Outcome, error) {
		if !up {
			return push.Outcome{Verdict: push.Transient, Reason: "dial: connection refused", HostLevel: true}, nil
		}
		return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
	})
	w, _ := push.NewWorker(store, store, tr, webhookProjection{}, push.WithMaxInFlight(1),
		push.WithLogger(slog.New(slog.DiscardHandler)))

	rep, _ := w.RunOnce(ctx, t0, 10)
	hosts, _ := store.Hosts(ctx, push.HostQuery{})
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
