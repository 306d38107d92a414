package push

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// hostFailed records a host-level failure at t.next (Outcome.HostLevel):
// the host is charged, not the registration, which is held while its host
// is down (HostStore.HostFailed).
func (t *turn) hostFailed(ctx context.Context, ev Evidence) error {
	w := t.w
	host := t.reg.Host()
	old, _ := w.book.get(host)
	h, err := w.store.HostFailed(ctx, HostFailure{Claim: t.claim, NextSeq: t.next, Host: host, Evidence: ev, Policy: w.opts.hostPolicy})
	if err != nil {
		return t.lost(err, fmt.Errorf("record host failure at #%d: %w", t.next, err))
	}
	w.book.learn(h)
	t.rep.HostFailures++
	if hook := w.opts.hooks.HostFailure; hook != nil {
		hook(h)
	}
	log := w.opts.logger.Debug
	if change := h.Transition(old); change != "" {
		log = w.opts.logger.Warn
	}
	log("herald: host-level failure; no attempt charged", "host", host, "state", h.State,
		"failures", h.Failures, "next_probe_at", h.NextProbeAt, "stream", t.reg.Stream, "registration", t.reg.ID,
		"cursor", t.next, "reason", ev.Error)
	return nil
}

// hostAnswered tells the store that the registration's host answered, when
// the worker knows the host as troubled (down, or failures counted): the
// host comes up and its held registrations are released. An answer from a
// host in good health costs nothing.
func (t *turn) hostAnswered(ctx context.Context, out Outcome) {
	w := t.w
	if !w.hostHealth || !out.HostAnswered() || w.book.size.Load() == 0 {
		return // no troubled host known: not even the host's name is needed
	}
	host := t.reg.Host()
	old, troubled := w.book.get(host)
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

// hostBook is what a worker knows of troubled hosts (Host.Troubled), from
// its claims (DueBatch.Hosts) and its own writes. A host is forgotten only
// when the store says it is well, so a stale entry costs one HostAnswered
// that finds the host up, never a missed release.
type hostBook struct {
	size atomic.Int64 // len(m), read without the lock: no troubled host, no lock on the hot path
	mu   sync.Mutex
	m    map[string]Host
}

func (b *hostBook) get(host string) (Host, bool) {
	if b.size.Load() == 0 {
		return Host{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.m[host]
	return h, ok
}

func (b *hostBook) learn(h Host) {
	b.mu.Lock()
	defer b.mu.Unlock()
	defer func() { b.size.Store(int64(len(b.m))) }()
	if !h.Troubled() {
		delete(b.m, h.Host)
		return
	}
	if b.m == nil {
		b.m = map[string]Host{}
	}
	b.m[h.Host] = h
}

func (b *hostBook) learnAll(hs []Host) {
	for _, h := range hs {
		b.learn(h)
	}
}
