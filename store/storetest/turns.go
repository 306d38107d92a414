package storetest

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// A worker's turn over the store, through the real HTTP transport to a
// receiver on loopback: what Checkpoint is for.
var turnTests = []test{
	{"PagesShareOneClaim", testPagesShareOneClaim},
	{"FailureOnALaterPage", testFailureOnALaterPage},
}

// arrival is one request the receiver got, with what the store said of the
// registration when it arrived.
type arrival struct {
	n      int    // the record's seq (from its id, "<stream>-N")
	cursor uint64 // the stored cursor
	owner  string // the stored lease owner
}

// pageReceiver serves registration stream/r: it answers 500 where fail says
// (n the seq, try 1 for its first request), else 200, and notes per request
// the registration as the store has it at that moment.
func pageReceiver(t *testing.T, b Backend, stream string, fail func(n, try int) bool) (url string, arrivals func() []arrival) {
	var (
		mu    sync.Mutex
		got   []arrival
		tries = map[int]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var rec struct{ ID string }
		var n int
		if err := json.Unmarshal(body, &rec); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if _, err := fmt.Sscanf(strings.TrimPrefix(rec.ID, stream+"-"), "%d", &n); err != nil {
			http.Error(w, "bad id", http.StatusBadRequest)
			return
		}
		st, err := b.Get(r.Context(), stream, "r")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, arrival{n: n, cursor: st.NextSeq, owner: st.LeaseOwner})
		tries[n]++
		failed := fail != nil && fail(n, tries[n])
		mu.Unlock()
		if failed {
			http.Error(w, "broken", http.StatusInternalServerError) // about the record: charged to the registration
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + stream, func() []arrival {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// pageSetup appends n records to stream, registers stream/r with window w
// at the receiver's URL, and returns a worker with drain pages of 3 that
// counts the registrations its claims took.
func pageSetup(t *testing.T, b Backend, stream string, n, window int, url string, claimed *int) *push.Worker {
	appendN(t, b, stream, n)
	r := reg(stream, "r", "webhook")
	r.URL, r.Window = url, window
	register(t, b, r)
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true})
	require.NoError(t, err)
	hooks := push.Hooks{Claim: func(_ time.Time, n int, _ error) { *claimed += n }} // called on RunOnce's goroutine
	w, err := push.NewWorker(b, b, tr, echo{}, push.WithDrainPage(3), push.WithOwner("w"), push.WithHooks(hooks),
		push.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	return w
}

// testPagesShareOneClaim: a backlog of four pages is served by one claim in
// one sweep. Each page's cursor is checkpointed before its first record is
// sent, under the lease the claim took, and the turn's last write releases
// the lease.
func testPagesShareOneClaim(t *testing.T, b Backend) {
	for _, window := range []int{1, 3} {
		stream := fmt.Sprintf("w%d", window)
		url, arrivals := pageReceiver(t, b, stream, nil)
		claimed := 0
		w := pageSetup(t, b, stream, 10, window, url, &claimed)
		rep, err := w.RunOnce(ctx(t), at(0), 10)
		require.NoError(t, err)
		require.Equal(t, push.SweepReport{Registrations: 1, Records: 10, Deliveries: 10}, rep, "window %d", window)
		require.Equal(t, 1, claimed, "one claim served every page")

		got := arrivals()
		require.Len(t, got, 10, "window %d: each record once", window)
		for i, a := range got {
			page := (a.n - 1) / 3
			if window == 1 {
				require.Equal(t, i+1, a.n, "window 1: in seq order")
			}
			require.Equal(t, uint64(3*page+1), a.cursor, "window %d: record %d was sent with the cursor at its page's start", window, a.n)
			require.Equal(t, "w#1", a.owner, "window %d: record %d was sent under the first claim's lease", window, a.n)
		}
		st := get(t, b, stream, "r")
		require.Equal(t, uint64(11), st.NextSeq)
		require.Empty(t, st.LeaseOwner, "the turn's last write released the lease")
		require.Zero(t, st.Attempts)
	}
}

// testFailureOnALaterPage: a failure on the second page is one attempt at
// the first unacknowledged record, with the progress of the pages before it
// saved, and the next turn resends from there.
func testFailureOnALaterPage(t *testing.T, b Backend) {
	for _, window := range []int{1, 3} {
		stream := fmt.Sprintf("w%d", window)
		url, arrivals := pageReceiver(t, b, stream, func(n, try int) bool { return n == 5 && try == 1 })
		claimed := 0
		w := pageSetup(t, b, stream, 10, window, url, &claimed)
		rep, err := w.RunOnce(ctx(t), at(0), 10)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Retries, "window %d", window)
		st := get(t, b, stream, "r")
		require.Equal(t, uint64(5), st.NextSeq, "window %d: the cursor is at the first unacknowledged record", window)
		require.Equal(t, 1, st.Attempts, "one attempt, however many were in flight")
		require.Contains(t, st.LastError, "500")
		require.Empty(t, st.LeaseOwner, "the retry released the lease")
		evs, err := b.Evidence(ctx(t), stream, "r", 0)
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.Equal(t, uint64(5), evs[0].Seq)
		first := arrived(arrivals())
		if window == 1 {
			require.Equal(t, []int{1, 2, 3, 4, 5}, first, "nothing after the failure was sent")
		} else {
			require.Equal(t, []int{1, 2, 3, 4, 5, 6}, sorted(first), "the window of page 2 was in flight together")
		}

		rep, err = w.RunOnce(ctx(t), st.NextAttemptAt, 10)
		require.NoError(t, err)
		require.Equal(t, 6, rep.Records, "window %d: from the failed record to the head", window)
		require.Equal(t, 2, claimed, "one claim a turn")
		again := arrived(arrivals())[len(first):]
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
