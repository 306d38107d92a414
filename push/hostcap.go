package push

import (
	"sync"
	"sync/atomic"
)

// hostTable is what one worker has in flight per host: the claims it holds
// on each, running or ready to run (passed to Store.Due as DueQuery.Busy, so
// that a claim never takes more of a host than the worker may serve) and the host's tokens, one held
// around each Transport.Deliver, so that a host never has more than
// MaxPerHost of the worker's messages open whatever the claims did.
//
// The mutex is taken when a turn starts or ends and when a claim reads Busy,
// never per message: a turn holds its host's entry and sends on its channel.
type hostTable struct {
	max   int // tokens per host (MaxPerHost)
	mu    sync.Mutex
	hosts map[string]*hostEntry
}

type hostEntry struct {
	tokens chan struct{} // capacity max; a send takes a token, a receive returns it
	turns  int           // this worker's claims on the host, running or ready; the entry goes at 0
	queued atomic.Int64  // of those, the ready ones not started
}

func newHostTable(max int) *hostTable {
	return &hostTable{max: max, hosts: map[string]*hostEntry{}}
}

// busy returns the claims held per host (the hosts with any), for
// DueQuery.Busy: claims, that is turns; a turn
// holds up to its window of the host's tokens, one per message in flight.
func (h *hostTable) busy() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.hosts) == 0 {
		return nil
	}
	m := make(map[string]int, len(h.hosts))
	for host, e := range h.hosts {
		m[host] = e.turns
	}
	return m
}

// enter counts a ready claim on host and returns the host's entry, whose
// tokens its turn takes around each send; the turn's start takes it off
// queued, and leave undoes the rest.
func (h *hostTable) enter(host string) *hostEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.hosts[host]
	if e == nil {
		e = &hostEntry{tokens: make(chan struct{}, h.max)}
		h.hosts[host] = e
	}
	e.turns++
	e.queued.Add(1)
	return e
}

func (h *hostTable) leave(host string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.hosts[host]; e != nil {
		if e.turns--; e.turns <= 0 {
			delete(h.hosts, host)
		}
	}
}

// load reads the table for Worker.Load.
func (h *hostTable) load() (messages, hosts, atCap int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.hosts {
		messages += len(e.tokens)
		if e.turns >= h.max {
			atCap++ // Due gives this worker no more of it
		}
	}
	return messages, len(h.hosts), atCap
}
