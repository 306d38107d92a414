package push_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
	"github.com/stretchr/testify/require"
)

// A registration with Kinds gets only the records of those kinds; the
// others are passed as a projection that yields no message: the cursor moves
// past them, nothing is sent, and a final record of another kind still
// completes the registration.
func TestKindsFilterRecords(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	_, err := db.Append(ctx, "order/7",
		journal.Entry{ID: "e1", Kind: "order.created", Payload: []byte(`{}`)},
		journal.Entry{ID: "e2", Kind: "customer.updated", Payload: []byte(`{}`)},
		journal.Entry{ID: "e3", Kind: "invoice.paid", Payload: []byte(`{}`)},
		journal.Entry{ID: "e4", Kind: "order.shipped", Payload: []byte(`{}`)},
	)
	require.NoError(t, err)
	var (
		mu  sync.Mutex
		got []string
	)
	tr := push.TransportFunc(func(_ context.Context, reg push.Registration, msg push.Message, _ time.Time) (push.Outcome, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, reg.ID+":"+msg.ID)
		return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
	})
	w, err := push.NewWorker(db, db, tr, webhookProjection{})
	require.NoError(t, err)
	_, err = w.Register(ctx, push.Registration{Stream: "order/7", ID: "orders", Namespace: "webhook",
		URL: "https://a.example/", Kinds: []string{"order.*"}})
	require.NoError(t, err)
	_, err = w.Register(ctx, push.Registration{Stream: "order/7", ID: "all", Namespace: "webhook", URL: "https://b.example/"})
	require.NoError(t, err)

	rep, err := w.RunOnce(ctx, time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC), 10)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"orders:e1", "orders:e4", "all:e1", "all:e2", "all:e3", "all:e4"}, got)
	require.Equal(t, 6, rep.Deliveries)
	require.Equal(t, 8, rep.Records, "every record is passed by both, sent or not")
	for _, id := range []string{"orders", "all"} {
		st, err := db.Get(ctx, "order/7", id)
		require.NoError(t, err)
		require.Equal(t, uint64(5), st.NextSeq, "%s: the cursor moved past every record", id)
	}

	// A final record of a kind it does not want still ends its stream.
	_, err = db.Append(ctx, "order/7", journal.Entry{ID: "e5", Kind: "customer.closed", Payload: []byte(`{}`), Final: true})
	require.NoError(t, err)
	got = nil
	rep, err = w.RunOnce(ctx, time.Date(2026, 3, 15, 11, 1, 0, 0, time.UTC), 10)
	require.NoError(t, err)
	require.Equal(t, []string{"all:e5"}, got)
	require.Equal(t, 2, rep.Completed, fmt.Sprintf("%+v", rep))
}
