package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// orderReceiver records the seqs each registration was sent, in the order
// sent; done closes after want messages.
type orderReceiver struct {
	mu   sync.Mutex
	seqs map[string][]uint64
	n    int
	want int
	done chan struct{}
}

func (o *orderReceiver) Deliver(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	var seq uint64
	if _, err := fmt.Sscan(msg.Header.Get("X-Seq"), &seq); err != nil {
		return push.Outcome{}, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seqs[reg.ID] = append(o.seqs[reg.ID], seq)
	if o.n++; o.n == o.want {
		close(o.done)
	}
	return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
}

// TestFanoutSharesReadsAndCommitsUnderRun runs the dispatcher over a
// fan-out on PostgreSQL with its shared pages and group commit: every
// registration gets every record once, in order, and its cursor is saved
// at the end of the stream; the turns of a claim share one journal read.
func TestFanoutSharesReadsAndCommitsUnderRun(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	const regs, recs = 300, 12
	for i := range regs {
		_, err := s.Register(ctx, push.Registration{Stream: "fanout", ID: fmt.Sprintf("r%03d", i), Namespace: "webhook",
			URL: fmt.Sprintf("https://receiver.example/%d", i)})
		require.NoError(t, err)
	}
	for i := range recs {
		_, err := s.Append(ctx, "fanout", journal.Entry{ID: fmt.Sprintf("e%d", i), Kind: "k", Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	calls := &callCounter{Store: s}
	recv := &orderReceiver{seqs: map[string][]uint64{}, want: regs * recs, done: make(chan struct{})}
	w, err := push.NewWorker(calls, calls, recv, payloadProjection{"webhook"}, push.WithMaxInFlight(64),
		push.WithMaxPerHost(push.MaxPerHostLimit), push.WithoutHostHealth())
	require.NoError(t, err)
	run, stop := context.WithCancel(ctx)
	ended := make(chan error)
	go func() { ended <- w.Run(run, time.Second) }()
	<-recv.done
	stop()
	require.NoError(t, <-ended)

	want := make([]uint64, recs)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	for i := range regs {
		id := fmt.Sprintf("r%03d", i)
		require.True(t, slices.Equal(want, recv.seqs[id]), "%s got %v", id, recv.seqs[id])
		st, err := s.Get(ctx, "fanout", id)
		require.NoError(t, err)
		require.Equal(t, uint64(recs+1), st.NextSeq, "%s: the cursor was saved", id)
		require.Empty(t, st.LeaseOwner, "%s: and the lease released", id)
	}
	require.LessOrEqual(t, calls.reads.Load(), calls.due.Load(), "at most one journal read per claim")
	require.Equal(t, int64(regs), calls.advances.Load()+calls.batched.Load(), "one save per turn")
	t.Logf("%d claims, %d reads, %d plain advances, %d batches of %d saves", calls.due.Load(), calls.reads.Load(),
		calls.advances.Load(), calls.batches.Load(), calls.batched.Load())
}
