package push_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// heldReceiver is a receiver on loopback that holds every request until the
// test answers it: each arrives on arrivals with the record's n, and waits
// for a status code on its own channel. It counts the requests it holds at
// once and logs arrivals and answers in the order they happened.
type heldReceiver struct {
	srv      *httptest.Server
	arrivals chan heldRequest
	closed   chan struct{} // the test ended: a request nobody waits for gets 503
	mu       sync.Mutex
	holding  int
	most     int
	log      []string // "sent N" when request N arrived, "acked N" when the test answered it 2xx
	instant  bool     // answer 202 at once instead of holding
}

type heldRequest struct {
	n      int
	answer chan int
}

func newHeldReceiver(t *testing.T) *heldReceiver {
	h := &heldReceiver{arrivals: make(chan heldRequest), closed: make(chan struct{})}
	h.srv = serve(t, func(w http.ResponseWriter, r *http.Request) {
		n, ok := recordN(w, r)
		if !ok {
			return
		}
		h.mu.Lock()
		h.holding++
		h.most = max(h.most, h.holding)
		h.log = append(h.log, fmt.Sprint("sent ", n))
		instant := h.instant
		h.mu.Unlock()
		code := http.StatusAccepted
		if !instant {
			req := heldRequest{n: n, answer: make(chan int)}
			select {
			case h.arrivals <- req:
				code = <-req.answer
			case <-h.closed:
				code = http.StatusServiceUnavailable
			}
		}
		h.mu.Lock()
		h.holding--
		h.mu.Unlock()
		w.WriteHeader(code)
	})
	t.Cleanup(func() { close(h.closed) }) // runs first
	return h
}

// next waits for the next request (no sleeping: the test blocks on the
// request itself, bounded by a network-style timeout).
func (h *heldReceiver) next(t *testing.T) heldRequest {
	t.Helper()
	select {
	case req := <-h.arrivals:
		return req
	case <-time.After(10 * time.Second):
		t.Fatal("no request arrived")
		return heldRequest{}
	}
}

// answer logs a 2xx before the receiver writes it, so that a request the
// answer made possible is logged after it.
func (h *heldReceiver) answer(req heldRequest, code int) {
	if code/100 == 2 {
		h.mu.Lock()
		h.log = append(h.log, fmt.Sprint("acked ", req.n))
		h.mu.Unlock()
	}
	req.answer <- code
}

func (h *heldReceiver) stats() (most int, log []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.most, append([]string(nil), h.log...)
}

// windowFixture registers one registration with window w at the held
// receiver and returns a worker that sends through the real transport.
func windowFixture(t *testing.T, h *heldReceiver, records, window int, opts ...push.Option) (*fixture, *push.Worker) {
	t.Helper()
	tr := loopback(t, 0)
	f := newFixture(t)
	f.append("s", records)
	f.registered(push.Registration{Stream: "s", ID: "r", URL: h.srv.URL + "/inbox", Window: window})
	w := f.workerOn(tr, append([]push.Option{push.WithMaxPerHost(64)}, opts...)...)
	return f, w
}

// sweepAsync runs one sweep at when on its own goroutine.
func sweepAsync(t *testing.T, w *push.Worker, when time.Time) <-chan push.SweepReport {
	done := make(chan push.SweepReport, 1)
	go func() {
		rep, err := w.RunOnce(t.Context(), when, 10)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	return done
}

// window takes the first n requests, by record.
func (h *heldReceiver) window(t *testing.T, n int) map[int]heldRequest {
	held := map[int]heldRequest{}
	for range n {
		req := h.next(t)
		held[req.n] = req
	}
	return held
}

// Window W keeps exactly W requests in flight and no more; record N+W is
// never sent before N was acknowledged (invariant 3), even when the records
// after N were acknowledged first.
func TestWindowKeepsWInFlight(t *testing.T) {
	const window, records = 4, 12
	h := newHeldReceiver(t)
	f, w := windowFixture(t, h, records, window)
	done := sweepAsync(t, w, at(0))

	held := h.window(t, window)
	require.Len(t, held, window, "the first W records are sent at once")
	for n := 1; n <= window; n++ {
		require.Contains(t, held, n, "records are sent in seq order")
	}
	// Answer the later ones of the window first: nothing new may start
	// while record 1 is unacknowledged.
	for n := window; n >= 1; n-- {
		h.answer(held[n], http.StatusAccepted)
		delete(held, n)
	}
	for sent := window; sent < records; sent++ {
		req := h.next(t)
		h.answer(req, http.StatusAccepted)
	}
	rep := <-done
	require.Equal(t, push.SweepReport{Registrations: 1, Records: records, Deliveries: records}, rep)
	require.Equal(t, uint64(records+1), f.get("s", "r").NextSeq)

	most, log := h.stats()
	require.Equal(t, window, most, "exactly W requests were in flight at most")
	pos := map[string]int{}
	for i, e := range log {
		pos[e] = i
	}
	for n := window + 1; n <= records; n++ {
		require.Greater(t, pos[fmt.Sprint("sent ", n)], pos[fmt.Sprint("acked ", n-window)],
			"record %d is sent only after record %d was acknowledged", n, n-window)
	}
}

// A window never takes more than its host's tokens: with MaxPerHost 2, a
// window of 8 has 2 requests in flight.
func TestWindowWithinPerHostCap(t *testing.T) {
	h := newHeldReceiver(t)
	f, w := windowFixture(t, h, 6, 8, push.WithMaxPerHost(2))
	done := sweepAsync(t, w, at(0))
	first := h.next(t)
	for range 5 {
		second := h.next(t)
		h.answer(first, http.StatusAccepted)
		first = second
	}
	h.answer(first, http.StatusAccepted)
	<-done
	most, _ := h.stats()
	require.Equal(t, 2, most, "the host's cap bounds the window's messages")
	require.Equal(t, uint64(7), f.get("s", "r").NextSeq)
}

// failMidWindow sends records through a window of 4, acknowledges record 1
// (record 5 enters the window), answers records 2 to 4 as answers say
// ({record, status}, in that order), then 5 with a 202, and returns the
// sweep's report.
func failMidWindow(t *testing.T, h *heldReceiver, records int, answers ...[2]int) (*fixture, *push.Worker, push.SweepReport) {
	t.Helper()
	f, w := windowFixture(t, h, records, 4)
	done := sweepAsync(t, w, at(0))
	held := h.window(t, 4)
	h.answer(held[1], http.StatusAccepted)
	five := h.next(t)
	require.Equal(t, 5, five.n, "record 1 acknowledged: record 5 enters the window")
	for _, a := range answers {
		h.answer(held[a[0]], a[1])
	}
	h.answer(five, http.StatusAccepted)
	return f, w, <-done
}

// A failure in the middle of a window stops new sends, lets those in flight
// end, and leaves the cursor at the first unacknowledged record with one
// attempt charged, its outcome deciding when several failed; the retry
// sends every later record again.
func TestWindowFailureInTheMiddle(t *testing.T) {
	const records = 8
	h := newHeldReceiver(t)
	// Record 2 fails; while it is unacknowledged the window (2..5) is full,
	// so whatever order the answers are taken in, nothing new is sent. 4's
	// is a later failure, host-level: not the one that decides; 3 and 5,
	// in flight, end.
	f, w, rep := failMidWindow(t, h, records, [2]int{2, http.StatusInternalServerError}, [2]int{4, http.StatusBadGateway},
		[2]int{3, http.StatusAccepted})
	require.Equal(t, push.SweepReport{Registrations: 1, Records: 1, Deliveries: 3, Retries: 1}, rep,
		"two failures in flight, one retry")

	st := f.get("s", "r")
	require.Equal(t, uint64(2), st.NextSeq, "the cursor is at the first unacknowledged record")
	require.Equal(t, 1, st.Attempts, "one attempt charged, not one per failed message")
	require.Zero(t, st.HostFailures, "the later host-level failure is not charged")
	evs := f.evidence("s", "r")
	require.Len(t, evs, 1)
	require.Equal(t, store.EventFailed, evs[0].Event)
	require.Equal(t, uint64(2), evs[0].Seq, "the first unacknowledged record's outcome decides")
	require.Equal(t, 500, evs[0].Status)
	_, log := h.stats()
	require.NotContains(t, log, "sent 6", "no new send after the failure")

	h.mu.Lock()
	h.instant, h.log = true, nil
	h.mu.Unlock()
	rep = <-sweepAsync(t, w, st.NextAttemptAt)
	require.Equal(t, records-1, rep.Records)
	_, log = h.stats()
	var again []string
	for n := 2; n <= records; n++ {
		again = append(again, fmt.Sprint("sent ", n))
	}
	require.ElementsMatch(t, again, log, "every record from the cursor is sent again, 3 and 5 included")
	require.Equal(t, uint64(records+1), f.get("s", "r").NextSeq)
	require.Zero(t, f.get("s", "r").Attempts)
}

// A 410 in the middle of a window parks the registration at it, even when a
// later record of the window failed first.
func TestWindowGoneInTheMiddleParks(t *testing.T) {
	h := newHeldReceiver(t)
	f, _, rep := failMidWindow(t, h, 6, [2]int{4, http.StatusInternalServerError}, [2]int{2, http.StatusGone}, [2]int{3, http.StatusAccepted})
	require.Equal(t, 1, rep.Parked)
	require.Zero(t, rep.Retries)

	st := f.get("s", "r")
	require.True(t, st.Parked)
	require.Equal(t, uint64(2), st.NextSeq, "parked at the 410")
	evs := f.evidence("s", "r")
	require.Len(t, evs, 1)
	require.Equal(t, store.EventParked, evs[0].Event)
	require.Equal(t, 410, evs[0].Status)
}

// Within a window, a skipped 4xx and a record of an unwanted kind count as
// acknowledged, and nothing after a terminal record is sent before it was
// acknowledged: the registration completes there.
func TestWindowSkipsAndEndsAtTerminal(t *testing.T) {
	f := newFixture(t)
	f.proj.terminal = func(rec journal.Record) bool { return rec.Seq == 6 }
	f.recv.answer = func(_ push.Registration, msg push.Message, _ int) push.Outcome {
		if msg.ID == "s#3" {
			return push.Outcome{Verdict: push.Rejected, Status: 422, Reason: "422 Unprocessable Content"}
		}
		return accepted()
	}
	f.append("s", 9)
	f.registered(push.Registration{Stream: "s", ID: "r",
		URL: "https://receiver.example/r", Window: 8, OnRejected: push.RejectSkip})
	rep := f.sweep(f.worker(), at(0))
	require.Equal(t, push.SweepReport{Registrations: 1, Records: 6, Deliveries: 5, Skipped: 1, Completed: 1}, rep)
	require.ElementsMatch(t, seqIDs("s", 1, 6), f.recv.ids("s/r"), "records 7 to 9 follow the terminal record: never sent")
	_, err := f.store.Get(t.Context(), "s", "r")
	require.ErrorIs(t, err, journal.ErrNotFound, "completed")
}
