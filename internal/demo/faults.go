package demo

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// flaky answers 503 Service Unavailable with a Retry-After of 1 or 2
// seconds to the first attempt at each of the first `times` messages it
// sees (by webhook-id), then hands every request to next: a receiver under
// load that recovers on its own, which herald rides out by waiting as long
// as it asks.
type flaky struct {
	next    http.Handler
	times   int
	ledger  *ledger
	mu      sync.Mutex
	refused map[string]bool
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("webhook-id")
	f.mu.Lock()
	n := len(f.refused)
	refuse := n < f.times && !f.refused[id]
	if refuse {
		f.refused[id] = true
	}
	f.mu.Unlock()
	if !refuse {
		f.next.ServeHTTP(w, r)
		return
	}
	f.ledger.refuse(r.URL.Path)
	w.Header().Set("Retry-After", strconv.Itoa(1+n%2)) // 1 s, 2 s, 1 s, …
	http.Error(w, "busy: try again shortly", http.StatusServiceUnavailable)
}

// gone answers every request 410 Gone: the receiver is not coming back,
// and herald parks its registration at once, cursor intact.
type gone struct{ ledger *ledger }

func (g *gone) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.ledger.refuse(r.URL.Path)
	http.Error(w, "this endpoint was removed", http.StatusGone)
}

// down answers 500 until it is brought back up, then hands every request
// to next: a receiver that is down long enough for herald to park its
// registration at the retry ceiling, and comes back.
type down struct {
	next   http.Handler
	up     atomic.Bool
	ledger *ledger
}

func (d *down) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d.up.Load() {
		d.next.ServeHTTP(w, r)
		return
	}
	d.ledger.refuse(r.URL.Path)
	http.Error(w, "down for maintenance", http.StatusInternalServerError)
}
