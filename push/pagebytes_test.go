package push_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// meteredJournal counts the payload bytes turns hold: a record is held from
// the Read that returned it until the transport is handed it, or until its
// stream is read again (the turn let its page go).
type meteredJournal struct {
	journal.Journal
	t *testing.T

	mu       sync.Mutex
	held     map[string]map[string]int // stream → record id → payload bytes
	heldNow  int
	maxHeld  int
	maxRead  int
	maxBytes map[int]bool // the byte bounds turns read with
}

func (m *meteredJournal) Read(ctx context.Context, stream string, from uint64, limit, maxBytes int) ([]journal.Record, error) {
	recs, err := m.Journal.Read(ctx, stream, from, limit, maxBytes)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maxBytes[maxBytes] = true
	for _, n := range m.held[stream] {
		m.heldNow -= n
	}
	m.held[stream] = map[string]int{}
	total := 0
	for _, r := range recs {
		total += len(r.Payload)
		m.held[stream][r.ID] = len(r.Payload)
	}
	if len(recs) > 1 && total > maxBytes {
		m.t.Errorf("a read from %s#%d returned %d records of %d bytes, past its bound of %d", stream, from, len(recs), total, maxBytes)
	}
	m.heldNow += total
	m.maxHeld, m.maxRead = max(m.maxHeld, m.heldNow), max(m.maxRead, total)
	return recs, err
}

// sentOn releases a record handed to the transport.
func (m *meteredJournal) sentOn(stream, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.heldNow -= m.held[stream][id]
	delete(m.held[stream], id)
}

// A turn's page is bounded in bytes as well as records: streams of ~1 MB
// records are read a page of at most PageBytes at a time (a larger record
// alone), so turns hold at most MaxInFlight pages, and every record is
// still delivered once, in order.
func TestTurnsHoldAtMostAPageOfBytes(t *testing.T) {
	const streams, records, budget = 4, 12, 1 << 20
	sizes := []int{300_000, 400_000, 1_000_000, 200_000, 1_048_576, 100, 700_000}
	for _, c := range []struct {
		name    string
		opts    []push.Option
		bounded bool
	}{
		{"at the default bound", nil, true},
		{"with no bound to speak of", []push.Option{push.WithPageBytes(push.MaxPageBytes)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, biggest := newFixture(t), 0
			for s := range streams {
				stream := fmt.Sprintf("big/%d", s)
				es := make([]journal.Entry, records)
				for i := range es {
					n := sizes[(s+i)%len(sizes)]
					biggest = max(biggest, n)
					es[i] = journal.Entry{ID: fmt.Sprintf("%s#%d", stream, i+1), Kind: "blob", ContentType: "application/octet-stream", Payload: make([]byte, n)}
				}
				_, err := f.store.Append(t.Context(), stream, es...)
				require.NoError(t, err)
				f.register(stream, "r")
			}
			m := &meteredJournal{Journal: f.store, t: t, held: map[string]map[string]int{}, maxBytes: map[int]bool{}}
			tr := transportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, when time.Time) (push.Outcome, error) {
				m.sentOn(reg.Stream, msg.ID)
				return f.recv.Deliver(ctx, reg, msg, when)
			})
			st := &checkpoints{Store: f.store}
			w, err := push.NewWorker(m, st, tr, f.proj, append([]push.Option{push.WithOwner("w1"),
				push.WithMaxInFlight(streams), push.WithMaxPerHost(streams)}, c.opts...)...)
			require.NoError(t, err)
			rep, err := w.RunOnce(t.Context(), at(1), 100)
			require.NoError(t, err)
			require.Equal(t, streams*records, rep.Deliveries, "one sweep: a page cut by its byte bound does not end the turn")
			require.Zero(t, st.n.Load(), "the cursor is written once a drain page, not once a byte-bound page")
			for s := range streams {
				stream := fmt.Sprintf("big/%d", s)
				require.Equal(t, seqIDs(stream, 1, records), f.recv.ids(stream+"/r"), "each record once, in order")
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			t.Logf("largest read %d bytes; most held at once %d bytes", m.maxRead, m.maxHeld)
			if !c.bounded {
				require.Greater(t, m.maxRead, budget*4, "the meter sees a whole backlog read at once")
				return
			}
			require.Equal(t, map[int]bool{push.DefaultPageBytes: true}, m.maxBytes, "turns read with the default bound")
			require.LessOrEqual(t, m.maxRead, max(budget, biggest), "a read within the bound, or one record")
			require.Greater(t, m.maxRead, budget/2, "pages were filled up to the bound")
			require.LessOrEqual(t, m.maxHeld, streams*max(budget, biggest), "turns held at most a page each")
		})
	}
}

// transportFunc is a push.Transport of one function.
type transportFunc func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error)

func (f transportFunc) Deliver(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	return f(ctx, reg, msg, at)
}

// checkpoints counts a store's Checkpoint calls.
type checkpoints struct {
	*memory.Store
	n atomic.Int64
}

func (c *checkpoints) Checkpoint(ctx context.Context, cl store.Claim, nextSeq uint64) error {
	c.n.Add(1)
	return c.Store.Checkpoint(ctx, cl, nextSeq)
}
