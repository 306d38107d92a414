package postgres_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/storetest"
)

// TestRateHoldsAtTheReceiverWithTwoDaemons: two workers running Run, each
// on a pool of its own, on one database, claiming every few milliseconds,
// deliver one registration's backlog at 20/s through a window of 8 to a
// loopback receiver that notes when each request arrived; once it has a
// third of the backlog, the daemon that sent the last request stops and the
// other goes on from the pace it left. In no window of a second did the
// receiver see more than 20 requests, and it saw the whole backlog.
func TestRateHoldsAtTheReceiverWithTwoDaemons(t *testing.T) {
	const (
		perSecond = 20
		backlog   = 120
	)
	var (
		mu       sync.Mutex
		arrivals []time.Time
		seen     = map[uint64]bool{}
		by       = map[string]int{}
		third    = make(chan string, 1) // the daemon that sent the backlog's third
		all      = make(chan struct{})
	)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		seq, _ := strconv.ParseUint(r.Header.Get("X-Seq"), 10, 64)
		mu.Lock()
		defer mu.Unlock()
		arrivals = append(arrivals, arrived)
		by[r.Header.Get("X-Worker")]++
		if seen[seq] {
			return
		}
		seen[seq] = true
		switch len(seen) {
		case backlog / 3:
			third <- r.Header.Get("X-Worker")
		case backlog:
			close(all)
		}
	}))
	t.Cleanup(rc.Close)

	url := migratedURL(t)
	stores := map[string]*postgres.Store{"A": openStore(t, url), "B": openStore(t, url)}
	for n := range backlog {
		_, err := stores["A"].Append(t.Context(), "s", entry(fmt.Sprintf("s-%d", n+1)))
		require.NoError(t, err)
	}
	_, err := stores["A"].Register(t.Context(), store.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: regURL(rc.URL, "s", "r"),
		Rate: store.Rate{Count: perSecond, Per: time.Second}, Window: 8})
	require.NoError(t, err)

	stop := map[string]context.CancelFunc{}
	var g errgroup.Group
	for name, s := range stores {
		w, err := push.NewWorker(s, s, storetest.HTTPTransport{Client: rc.Client(), Worker: name}, storetest.PayloadProjection{},
			push.WithOwner(name), push.WithMaxPerHost(8))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		stop[name] = cancel
		g.Go(func() error { return w.Run(ctx, 3*time.Millisecond) }) // both claim all the time: they race for every burst
	}
	deadline := time.After(2 * time.Minute) // 6 s of bursts at the rate
	select {
	case name := <-third:
		stop[name]() // its turn in flight ends; the other daemon goes on
	case <-deadline:
		t.Error("a third of the backlog was not delivered within 2 minutes")
	}
	select {
	case <-all:
	case <-deadline:
		t.Error("the backlog was not delivered within 2 minutes")
	}
	for _, cancel := range stop {
		cancel()
	}
	require.NoError(t, g.Wait())

	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	most, from := 0, 0
	for i, a := range arrivals { // the window [a, a+1s) for every arrival a
		end, _ := slices.BinarySearchFunc(arrivals, a.Add(time.Second), func(x, t time.Time) int { return x.Compare(t) })
		if end-i > most {
			most, from = end-i, i
		}
	}
	t.Logf("%d requests (%v by daemon) in %v; at most %d in a second, from +%v",
		len(arrivals), by, arrivals[len(arrivals)-1].Sub(arrivals[0]).Round(time.Millisecond), most, arrivals[from].Sub(arrivals[0]).Round(time.Millisecond))
	require.LessOrEqual(t, most, perSecond, "no window of a second holds more than the rate")
	require.Len(t, seen, backlog)
	require.Len(t, by, 2, "both daemons served the registration")
}
