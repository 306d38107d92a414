package push_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// The worker against a real HTTP receiver on loopback, through the real
// transport: a 503 with Retry-After is honoured at the receiver's instant, a
// 410 parks, and the records arrive in order, byte for byte.
func TestWorkerOverRealHTTP(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies = map[string][]string{}
		busy   = true
	)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/gone":
			http.Error(w, "this inbox was deleted", http.StatusGone)
			return
		case strings.Contains(string(body), `"n":2`) && busy:
			busy = false
			w.Header().Set("Retry-After", "7")
			http.Error(w, "deploying", http.StatusServiceUnavailable)
			return
		}
		bodies[r.URL.Path] = append(bodies[r.URL.Path], string(body))
		w.WriteHeader(http.StatusAccepted)
	})

	tr := loopback(t, 0)
	f := newFixture(t)
	f.append("s", 4)
	for _, path := range []string{"/ok", "/gone"} {
		f.registered(push.Registration{Stream: "s", ID: path, URL: srv.URL + path})
	}
	w := f.workerOn(tr)

	rep, err := w.RunOnce(t.Context(), at(0), 10)
	require.NoError(t, err)
	require.Equal(t, push.SweepReport{Registrations: 2, Records: 1, Deliveries: 1, Retries: 1, Parked: 1}, rep)

	ok := f.get("s", "/ok")
	require.Equal(t, uint64(2), ok.NextSeq)
	require.Equal(t, at(7), ok.NextAttemptAt, "Retry-After: 7 is honoured from the sweep's instant")
	ev := f.evidence("s", "/ok")[0]
	require.Equal(t, 503, ev.Status)
	require.Contains(t, ev.Body, "deploying")

	gone := f.get("s", "/gone")
	require.True(t, gone.Parked)
	require.Equal(t, uint64(1), gone.NextSeq, "parked with its cursor intact")
	require.Equal(t, 410, f.evidence("s", "/gone")[0].Status)

	rep, err = w.RunOnce(t.Context(), at(6), 10)
	require.NoError(t, err)
	require.Zero(t, rep.Registrations, "not before the receiver's instant")
	rep, err = w.RunOnce(t.Context(), at(7), 10)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Deliveries)
	require.Equal(t, uint64(5), f.get("s", "/ok").NextSeq)

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{`{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`}, bodies["/ok"], "in order, byte for byte")
	require.Empty(t, bodies["/gone"])
}

// Under Run, a failure is dated when its answer came, not when its turn was
// claimed: the evidence's instant follows the request, and Retry-After is
// counted from it, so a retry is never sooner than the receiver asked.
func TestRetryAfterCountsFromTheAnswerUnderRun(t *testing.T) {
	arrived := make(chan time.Time, 1)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case arrived <- time.Now():
		default:
		}
		w.Header().Set("Retry-After", "60")
		http.Error(w, "deploying", http.StatusServiceUnavailable)
	})
	f := newFixture(t)
	f.append("s", 1)
	f.registerURL("s", "r", srv.URL+"/inbox")
	st := retries{Store: f.store, ch: make(chan store.Evidence, 1)}
	d := runDaemon(t, f.build(f.store, st, loopback(t, 0), f.proj))
	sent := receive(t, arrived)
	ev := receive(t, st.ch)
	d.stop(t)

	require.False(t, ev.At.Before(sent), "dated at the answer (%v), not before the request (%v)", ev.At, sent)
	require.Equal(t, ev.At.Add(time.Minute), ev.NotBefore, "Retry-After: 60 from the answer")
	require.Equal(t, ev.NotBefore, f.get("s", "r").NextAttemptAt)
}

// retries is a store that tells each failure Retry recorded.
type retries struct {
	*memory.Store
	ch chan store.Evidence
}

func (s retries) Retry(ctx context.Context, c store.Claim, next uint64, notBefore time.Time, ev store.Evidence) error {
	err := s.Store.Retry(ctx, c, next, notBefore, ev)
	if err == nil {
		s.ch <- ev
	}
	return err
}
