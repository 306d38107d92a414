package push_test

import (
	"context"
	"fmt"
	"net/http"
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

func (f *fixture) countingWorker(opts ...push.Option) (*push.Worker, *countingJournal) {
	f.t.Helper()
	j := &countingJournal{Journal: f.store, reads: map[string]int{}}
	return f.build(j, f.store, f.recv, f.proj, opts...), j
}

func TestTurnsOfOneClaimShareOneRead(t *testing.T) {
	f := newFixture(t)
	f.append("s", 10)
	for i := range 50 {
		f.register("s", fmt.Sprintf("r%d", i))
	}
	w, j := f.countingWorker(push.WithMaxInFlight(50))
	rep := f.sweep(w, at(1))
	require.Equal(t, 500, rep.Deliveries)
	require.Equal(t, 1, j.reads["s"], "50 turns of one claim, one stream, one cursor: one journal read")
	for i := range 50 {
		require.Equal(t, seqIDs("s", 1, 10), f.recv.ids(fmt.Sprintf("s/r%d", i)), "each registration in order")
	}
}

func TestAPageReadBeforeAClaimStandsForNoTurnOfIt(t *testing.T) {
	// The hazard: a stream sealed, completed, pruned away and started anew
	// under the same name has new records at the old seqs.
	f := newFixture(t)
	ctx := t.Context()
	_, err := f.store.Append(ctx, "s", journal.Entry{ID: "old-1", Kind: "k", Payload: []byte(`{}`)}, journal.Entry{ID: "old-2", Kind: "k", Payload: []byte(`{}`), Final: true})
	require.NoError(t, err)
	f.register("s", "first")
	w, j := f.countingWorker()
	rep := f.sweep(w, at(1))
	require.Equal(t, 1, rep.Completed)
	pr, err := f.store.Prune(ctx, store.PruneQuery{At: at(2)})
	require.NoError(t, err)
	require.Equal(t, 1, pr.Removed, "the sealed, completed stream is gone")

	_, err = f.store.Append(ctx, "s", journal.Entry{ID: "new-1", Kind: "k", Payload: []byte(`{}`)}, journal.Entry{ID: "new-2", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	f.register("s", "second")
	f.sweep(w, at(3))
	require.Equal(t, []string{"new-1", "new-2"}, f.recv.ids("s/second"), "the new stream's records, not the cached old ones")
	require.Equal(t, 2, j.reads["s"])
}

// pageArrival is one request a cursorReceiver got, with the registration's
// stored cursor and lease owner at that moment.
type pageArrival struct {
	n      int
	cursor uint64
	owner  string
}

// cursorReceiver is a loopback receiver for registration s/r of f: it
// accepts every request, notes what the store said of s/r when it arrived,
// calls seen with the record's n, and sends the arrival on got.
func cursorReceiver(t *testing.T, f *fixture, seen func(n int)) (url string, got chan pageArrival) {
	got = make(chan pageArrival, 100)
	var mu sync.Mutex
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		n, ok := recordN(w, r)
		if !ok {
			return
		}
		st, err := f.store.Get(r.Context(), "s", "r")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if seen != nil {
			seen(n)
		}
		got <- pageArrival{n: n, cursor: st.NextSeq, owner: st.LeaseOwner}
		w.WriteHeader(http.StatusOK)
	})
	return srv.URL + "/hook", got
}

// The dispatcher serves a backlog of four pages with one claim: the turn
// checkpoints each page and reads the next instead of ending, and no other
// claim finds the registration meanwhile.
func TestDispatcherServesPagesWithOneClaim(t *testing.T) {
	f := newFixture(t)
	url, got := cursorReceiver(t, f, nil)
	f.append("s", 10)
	f.registerURL("s", "r", url)
	var claimed, turns atomic.Int64
	hooks := push.Hooks{
		Claim: func(_ time.Time, n int, _ error) { claimed.Add(int64(n)) },
		Turn:  func(time.Time, push.SweepReport, time.Duration, error) { turns.Add(1) },
	}
	w := f.workerOn(loopback(t, 0), push.WithOwner("w"), push.WithDrainPage(3), push.WithHooks(hooks))
	d := runDaemon(t, w)
	for i := 1; i <= 10; i++ {
		a := <-got
		require.Equal(t, i, a.n, "in seq order")
		require.Equal(t, uint64(3*((i-1)/3)+1), a.cursor, "record %d was sent with the cursor checkpointed at its page's start", i)
		require.Equal(t, "w#1", a.owner, "record %d was sent under the first claim's lease", i)
	}
	d.stop(t)
	require.Equal(t, int64(1), claimed.Load(), "one claim served the four pages")
	require.Equal(t, int64(1), turns.Load(), "in one turn")
	st := f.get("s", "r")
	require.Equal(t, uint64(11), st.NextSeq)
	require.Empty(t, st.LeaseOwner)
}

// A turn whose budget (half the lease) runs out in its second page starts
// no more records: it ends with the first page checkpointed, the
// acknowledged part of the second saved, and a backlog for the next claim.
func TestBudgetSpentOnALaterPage(t *testing.T) {
	f := newFixture(t)
	var spent atomic.Bool
	url, got := cursorReceiver(t, f, func(n int) {
		if n == 5 {
			spent.Store(true) // from now on the turn's wall clock is past its budget
		}
	})
	clock := push.WithWallClock(func() time.Time {
		if spent.Load() {
			return time.Now().Add(push.DefaultLease)
		}
		return time.Now()
	})
	f.append("s", 10)
	f.registerURL("s", "r", url)
	w := f.workerOn(loopback(t, 0), push.WithDrainPage(3), clock)
	require.Equal(t, push.SweepReport{Registrations: 1, Records: 5, Deliveries: 5, Backlog: 1}, f.sweep(w, at(0)))
	close(got)
	var arrived []pageArrival
	for a := range got {
		arrived = append(arrived, a)
	}
	require.Equal(t, []pageArrival{{1, 1, "w1#1"}, {2, 1, "w1#1"}, {3, 1, "w1#1"}, {4, 4, "w1#1"}, {5, 4, "w1#1"}}, arrived,
		"page 2 was sent under the same lease, its start checkpointed; nothing after the budget ran out")
	st := f.get("s", "r")
	require.Equal(t, uint64(6), st.NextSeq, "the acknowledged records are saved")
	require.Empty(t, st.LeaseOwner, "and the claim released for the next sweep")
	require.Zero(t, st.Attempts, "a spent budget is no failure")
}

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
			tr := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, when time.Time) (push.Outcome, error) {
				m.sentOn(reg.Stream, msg.ID)
				return f.recv.Deliver(ctx, reg, msg, when)
			})
			st := &checkpoints{Store: f.store}
			w := f.build(m, st, tr, f.proj, append([]push.Option{push.WithMaxInFlight(streams), push.WithMaxPerHost(streams)}, c.opts...)...)
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

// checkpoints counts a store's Checkpoint calls.
type checkpoints struct {
	*memory.Store
	n atomic.Int64
}

func (c *checkpoints) Checkpoint(ctx context.Context, cl store.Claim, nextSeq uint64) error {
	c.n.Add(1)
	return c.Store.Checkpoint(ctx, cl, nextSeq)
}
