// Package hosts is a worker's bookkeeping of hosts: the troubled ones it
// knows of (Book) and what it has in flight on each (Table).
package hosts

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldpush/herald/store"
)

// Book is what a worker knows of troubled hosts, from its claims
// (DueBatch.Hosts) and writes. A host is forgotten only when the store says
// it is well: a stale entry costs one HostAnswered, never a missed release.
type Book struct {
	size atomic.Int64 // len(m), read without the lock: no troubled host, no lock on the hot path
	mu   sync.Mutex
	m    map[string]store.Host
}

// Troubled reports whether the book knows of any troubled host.
func (b *Book) Troubled() bool { return b.size.Load() > 0 }

// Get returns what the book knows of host, if it is troubled.
func (b *Book) Get(host string) (store.Host, bool) {
	if b.size.Load() == 0 {
		return store.Host{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.m[host]
	return h, ok
}

// Learn records h, forgetting its host if it is well.
func (b *Book) Learn(h store.Host) {
	b.mu.Lock()
	defer b.mu.Unlock()
	defer func() { b.size.Store(int64(len(b.m))) }()
	if !h.Troubled() {
		delete(b.m, h.Host)
		return
	}
	if b.m == nil {
		b.m = map[string]store.Host{}
	}
	b.m[h.Host] = h
}

// Table is what one worker has in flight per host: its claims, running
// or ready (DueQuery.Busy), and MaxPerHost Tokens, one held around each
// Deliver; and the hosts that went slow. The mutex is taken per claim and
// turn, never per message.
type Table struct {
	max   int // Tokens per host (MaxPerHost)
	mu    sync.Mutex
	hosts map[string]*Entry
	slow  map[string]time.Time // hosts whose message waited SlowAfter, and when one last did (MarkSlow)
	prune int                  // len(slow) at which MarkSlow forgets the marks past SlowMemory
}

// SlowMemory is how long a host stays slow after a message to it waited
// SlowAfter, unless a turn of it is answered promptly first (Answered). A
// variable only so that a test can wait out a mark.
var SlowMemory = time.Minute

// Entry is one host's line of a Table.
type Entry struct {
	Tokens chan struct{} // capacity max; a send takes a token, a receive returns it
	turns  int           // this worker's claims on the host, running or ready; the entry goes at 0
	Queued atomic.Int64  // of those, the ready ones not started
}

// NewTable returns a table of max tokens per host.
func NewTable(max int) *Table {
	return &Table{max: max, hosts: map[string]*Entry{}}
}

// Busy returns the claims held per host, for DueQuery.Busy.
func (h *Table) Busy() map[string]int {
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

// MarkSlow records that a message to host waited SlowAfter at now: its
// claims wait for the slow budget (Slow) for SlowMemory.
func (h *Table) MarkSlow(host string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.slow == nil {
		h.slow, h.prune = map[string]time.Time{}, 64
	}
	h.slow[host] = now
	if len(h.slow) >= h.prune {
		for host, at := range h.slow {
			if now.Sub(at) >= SlowMemory {
				delete(h.slow, host)
			}
		}
		h.prune = max(64, 2*len(h.slow))
	}
}

// Slow reports whether host is slow at now (MarkSlow).
func (h *Table) Slow(host string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.slow[host]
	return ok && now.Sub(at) < SlowMemory
}

// Answered forgets that host was slow: a turn of it was answered within
// SlowAfter.
func (h *Table) Answered(host string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.slow, host)
}

// Enter counts a ready claim on host and returns the host's entry; the
// turn's start takes it off Queued, and leave undoes the rest.
func (h *Table) Enter(host string) *Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.hosts[host]
	if e == nil {
		e = &Entry{Tokens: make(chan struct{}, h.max)}
		h.hosts[host] = e
	}
	e.turns++
	e.Queued.Add(1)
	return e
}

// Leave undoes Enter once the claim's turn ended.
func (h *Table) Leave(host string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.hosts[host]; e != nil {
		if e.turns--; e.turns <= 0 {
			delete(h.hosts, host)
		}
	}
}

// Load reads the table for Worker.Load.
func (h *Table) Load() (messages, hosts, atCap int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.hosts {
		messages += len(e.Tokens)
		if e.turns >= h.max {
			atCap++ // Due gives this worker no more of it
		}
	}
	return messages, len(h.hosts), atCap
}
