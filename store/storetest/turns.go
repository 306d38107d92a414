package storetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// A worker's turn over the store: what Checkpoint is for.
var turnTests = []test{
	{"PagesShareOneClaim", testPagesShareOneClaim},
	{"FailureOnALaterPage", testFailureOnALaterPage},
}

// echo is a projection of one message per record, its id the record's.
type echo struct{}

func (echo) Messages(_ context.Context, rec journal.Record, _ push.Registration) ([]push.Message, error) {
	return []push.Message{{ID: rec.ID, ContentType: "application/json", Body: rec.Payload}}, nil
}
func (echo) Terminal(rec journal.Record) bool { return rec.Final }
func (echo) Namespace() string                { return "webhook" }

// arrival is one message a receiver was given.
type arrival struct {
	key    push.Key
	n      int    // the record's seq, from its id ("<stream>-N")
	cursor uint64 // with a receiver's store: the cursor stored when it came
	owner  string // and the lease owner
}

// receiver is a push.Transport that notes every message it is given, and,
// given a store, what the store says of the registration at that moment. It
// answers 500 where fail says (try is 1 for a record's first message), else
// 200.
type receiver struct {
	b     Backend
	fail  func(n, try int) bool
	mu    sync.Mutex
	got   []arrival
	tries map[arrival]int
}

func (rc *receiver) Deliver(ctx context.Context, reg push.Registration, msg push.Message, _ time.Time) (push.Outcome, error) {
	n, err := strconv.Atoi(msg.ID[strings.LastIndexByte(msg.ID, '-')+1:])
	if err != nil {
		return push.Outcome{}, err
	}
	a := arrival{key: reg.Key(), n: n}
	if rc.b != nil {
		st, err := rc.b.Get(ctx, reg.Stream, reg.ID)
		if err != nil {
			return push.Outcome{}, err
		}
		a.cursor, a.owner = st.NextSeq, st.LeaseOwner
	}
	rc.mu.Lock()
	rc.got = append(rc.got, a)
	if rc.tries == nil {
		rc.tries = map[arrival]int{}
	}
	rc.tries[arrival{key: a.key, n: n}]++
	failed := rc.fail != nil && rc.fail(n, rc.tries[arrival{key: a.key, n: n}])
	rc.mu.Unlock()
	if failed { // about the record: charged to the registration
		return push.Outcome{Verdict: push.Transient, Status: 500, Reason: "500 Internal Server Error"}, nil
	}
	return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
}

func (rc *receiver) arrivals() []arrival {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// worker returns a worker over b that delivers to tr, with drain pages of
// page records, and options.
func worker(t *testing.T, b Backend, tr push.Transport, page int, opts ...push.Option) *push.Worker {
	w, err := push.NewWorker(b, b, tr, echo{}, append(opts, push.WithDrainPage(page),
		push.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))...)
	require.NoError(t, err)
	return w
}

// pageSetup appends n records to stream, registers stream/r with window w,
// and returns a worker with drain pages of 3, delivering to rc, that counts
// the registrations its claims took.
func pageSetup(t *testing.T, b Backend, stream string, n, window int, rc *receiver, claimed *int) *push.Worker {
	appendN(t, b, stream, n)
	r := reg(stream, "r", "webhook")
	r.Window = window
	register(t, b, r)
	hooks := push.Hooks{Claim: func(_ time.Time, n int, _ error) { *claimed += n }} // called on RunOnce's goroutine
	return worker(t, b, rc, 3, push.WithOwner("w"), push.WithHooks(hooks))
}

// testPagesShareOneClaim: a backlog of four pages is served by one claim in
// one sweep. Each page's cursor is checkpointed before its first record is
// sent, under the lease the claim took, and the turn's last write releases
// the lease.
func testPagesShareOneClaim(t *testing.T, b Backend) {
	for _, window := range []int{1, 3} {
		stream := fmt.Sprintf("w%d", window)
		rc := &receiver{b: b}
		claimed := 0
		w := pageSetup(t, b, stream, 10, window, rc, &claimed)
		rep, err := w.RunOnce(ctx(t), at(0), 10)
		require.NoError(t, err)
		require.Equal(t, push.SweepReport{Registrations: 1, Records: 10, Deliveries: 10}, rep, "window %d", window)
		require.Equal(t, 1, claimed, "one claim served every page")

		got := rc.arrivals()
		require.Len(t, got, 10, "window %d: each record once", window)
		for i, a := range got {
			page := (a.n - 1) / 3
			if window == 1 {
				require.Equal(t, i+1, a.n, "window 1: in seq order")
			}
			require.Equal(t, uint64(3*page+1), a.cursor, "window %d: record %d was sent with the cursor at its page's start", window, a.n)
			require.Equal(t, "w#1", a.owner, "window %d: record %d was sent under the first claim's lease", window, a.n)
		}
		regIs(t, b, stream, "r", 11, 0, "", "the turn's last write released the lease")
	}
}

// testFailureOnALaterPage: a failure on the second page is one attempt at
// the first unacknowledged record, with the progress of the pages before it
// saved, and the next turn resends from there.
func testFailureOnALaterPage(t *testing.T, b Backend) {
	for _, window := range []int{1, 3} {
		stream := fmt.Sprintf("w%d", window)
		rc := &receiver{b: b, fail: func(n, try int) bool { return n == 5 && try == 1 }}
		claimed := 0
		w := pageSetup(t, b, stream, 10, window, rc, &claimed)
		rep, err := w.RunOnce(ctx(t), at(0), 10)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Retries, "window %d", window)
		st := regIs(t, b, stream, "r", 5, 1, "", "the cursor is at the first unacknowledged record; one attempt, however many were in flight; the retry released the lease")
		require.Contains(t, st.LastError, "500")
		evs := evidence(t, b, stream, "r")
		require.Len(t, evs, 1)
		require.Equal(t, uint64(5), evs[0].Seq)
		first := arrived(rc.arrivals())
		if window == 1 {
			require.Equal(t, []int{1, 2, 3, 4, 5}, first, "nothing after the failure was sent")
		} else {
			require.Equal(t, []int{1, 2, 3, 4, 5, 6}, sorted(first), "the window of page 2 was in flight together")
		}

		rep, err = w.RunOnce(ctx(t), st.NextAttemptAt, 10)
		require.NoError(t, err)
		require.Equal(t, 6, rep.Records, "window %d: from the failed record to the head", window)
		require.Equal(t, 2, claimed, "one claim a turn")
		again := arrived(rc.arrivals())[len(first):]
		require.Equal(t, []int{5, 6, 7, 8, 9, 10}, sorted(again), "every record from the failed one is sent again")
		require.Equal(t, uint64(11), get(t, b, stream, "r").NextSeq)
	}
}

func arrived(as []arrival) []int { return mapped(as, func(a arrival) int { return a.n }) }

func sorted(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}
