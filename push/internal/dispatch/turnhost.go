package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldpush/herald/push/wire"
	"github.com/heraldpush/herald/store"
)

// hostFailed charges a host-level failure at t.next to the host
// (HostStore.HostFailed); paced is the rate's next burst, if the turn sent
// under one.
func (t *turn) hostFailed(ctx context.Context, ev store.Evidence, paced time.Time) error {
	w, host := t.w, t.hostName
	old, _ := w.book.Get(host)
	h, err := w.store.HostFailed(ctx, store.HostFailure{Claim: t.claim, NextSeq: t.next, Host: host, Evidence: ev, Horizon: w.cfg.HostHorizon})
	if err != nil {
		return t.lost(err, fmt.Errorf("record host failure at #%d: %w", t.next, err))
	}
	w.book.Learn(h)
	t.rep.HostFailures++
	if hook := w.cfg.Hooks.HostFailure; hook != nil {
		hook(h)
	}
	log := w.cfg.Logger.Debug
	if change := h.Transition(old); change != "" || w.failing.due(t.reg.Key(), ev.At) {
		log = w.cfg.Logger.Warn
	}
	charged, _ := store.ChargeHost(t.reg.Stream, t.reg.ID, ev, t.next, t.reg.NextSeq, t.reg.HostFailures) // as the store did
	next := charged.NotBefore
	if paced.After(next) {
		next = paced // as the store keeps it (store.HostStore.HostFailed)
	}
	if held, _ := h.Holds(ev.At); held && h.NextProbeAt.After(next) {
		next = h.NextProbeAt
	}
	args := []any{"host", host, "state", h.State, "failures", h.Failures}
	if !h.NextProbeAt.IsZero() { // an up host has no probe
		args = append(args, "next_probe_at", h.NextProbeAt)
	}
	log("herald: host-level failure; no attempt charged", append(args, "stream", t.reg.Stream, "registration", t.reg.ID,
		"cursor", t.next, "status", ev.Status, "next_attempt_at", next, "reason", ev.Error)...)
	return nil
}

// hostAnswered tells the store that the registration's host answered, if
// the worker knows it as troubled; a healthy host's answer costs nothing.
func (t *turn) hostAnswered(ctx context.Context, out wire.Outcome) {
	w, host := t.w, t.hostName
	if !out.HostAnswered() {
		return
	}
	old, troubled := w.book.Get(host) // free while no host is troubled
	if !troubled {
		return
	}
	h, err := w.store.HostAnswered(context.WithoutCancel(ctx), host, t.at)
	if err != nil {
		// The answer stands; the host stays marked until the next answer.
		w.cfg.Logger.Warn("herald: cannot record that a host answered", "host", host, "err", err)
		return
	}
	w.book.Learn(h)
	// Up since another instant: another worker's answer brought it up, and
	// that worker said so.
	if h.Transition(old) != "" && h.Since.Equal(t.at) {
		w.cfg.Logger.Info("herald: host is up; its registrations are released", "host", host, "was", old.State)
	}
}
