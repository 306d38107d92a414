package push

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/heraldpush/herald/store"
)

// hostFailed charges a host-level failure at t.next to the host
// (HostStore.HostFailed).
func (t *turn) hostFailed(ctx context.Context, ev store.Evidence) error {
	w, host := t.w, t.hostName
	old, _ := w.book.get(host)
	h, err := w.store.HostFailed(ctx, store.HostFailure{Claim: t.claim, NextSeq: t.next, Host: host, Evidence: ev, Horizon: w.opts.hostHorizon})
	if err != nil {
		return t.lost(err, fmt.Errorf("record host failure at #%d: %w", t.next, err))
	}
	w.book.learn(h)
	t.rep.HostFailures++
	if hook := w.opts.hooks.HostFailure; hook != nil {
		hook(h)
	}
	log := w.opts.logger.Debug
	if change := h.Transition(old); change != "" || w.failing.due(t.reg.Key(), t.at) {
		log = w.opts.logger.Warn
	}
	charged, _ := store.ChargeHost(t.reg.Stream, t.reg.ID, ev, t.next, t.reg.NextSeq, t.reg.HostFailures) // as the store did
	next := charged.NotBefore
	if held, _ := h.Holds(t.at); held && h.NextProbeAt.After(next) {
		next = h.NextProbeAt
	}
	log("herald: host-level failure; no attempt charged", "host", host, "state", h.State,
		"failures", h.Failures, "next_probe_at", h.NextProbeAt, "stream", t.reg.Stream, "registration", t.reg.ID,
		"cursor", t.next, "status", ev.Status, "next_attempt_at", next, "reason", ev.Error)
	return nil
}

// hostAnswered tells the store that the registration's host answered, if
// the worker knows it as troubled; a healthy host's answer costs nothing.
func (t *turn) hostAnswered(ctx context.Context, out Outcome) {
	w, host := t.w, t.hostName
	if !out.HostAnswered() {
		return
	}
	old, troubled := w.book.get(host) // free while no host is troubled
	if !troubled {
		return
	}
	h, err := w.store.HostAnswered(context.WithoutCancel(ctx), host, t.at)
	if err != nil {
		// The answer stands; the host stays marked until the next answer.
		w.opts.logger.Warn("herald: cannot record that a host answered", "host", host, "err", err)
		return
	}
	w.book.learn(h)
	if h.Transition(old) != "" {
		w.opts.logger.Info("herald: host is up; its registrations are released", "host", host, "was", old.State)
	}
}

// hostBook is what a worker knows of troubled hosts, from its claims
// (DueBatch.Hosts) and writes. A host is forgotten only when the store says
// it is well: a stale entry costs one HostAnswered, never a missed release.
type hostBook struct {
	size atomic.Int64 // len(m), read without the lock: no troubled host, no lock on the hot path
	mu   sync.Mutex
	m    map[string]store.Host
}

func (b *hostBook) get(host string) (store.Host, bool) {
	if b.size.Load() == 0 {
		return store.Host{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.m[host]
	return h, ok
}

func (b *hostBook) learn(h store.Host) {
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

// hostTable is what one worker has in flight per host: its claims, running
// or ready (DueQuery.Busy), and MaxPerHost tokens, one held around each
// Deliver. The mutex is taken per claim and turn, never per message.
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

// busy returns the claims held per host, for DueQuery.Busy.
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

// enter counts a ready claim on host and returns the host's entry; the
// turn's start takes it off queued, and leave undoes the rest.
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
