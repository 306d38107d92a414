package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/heraldpush/herald/store"
)

// leases are the claims a dispatcher holds, ready or running, which a
// goroutine of its own renews every third of the lease (Store.Renew), so
// that a claim that takes long, or a store that answers slowly, delays no
// renewal. A running turn's context ends at nine tenths of its lease, and a
// renewal moves that end; a turn whose lease could not be renewed ends
// before its lease lapses, so it never writes under one; one whose lease
// a renewal found taken ends at once (errLeaseTaken).
type leases struct {
	mu   sync.Mutex
	held map[*slot]struct{}
}

// hold adds the claims just made.
func (l *leases) hold(ss []*slot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[*slot]struct{}{}
	}
	for _, s := range ss {
		l.held[s] = struct{}{}
	}
}

// run returns ctx for s's turn, ended at nine tenths of its lease.
func (l *leases) run(ctx context.Context, s *slot, lease time.Duration) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	s.cancel = cancel
	s.expire = time.AfterFunc(time.Until(s.wallUntil.Add(-lease/10)), func() { cancel(errLeaseEnding) })
	if s.taken {
		cancel(errLeaseTaken) // taken while it waited: it sends nothing
	}
	return ctx
}

// drop forgets s: its turn ended, or it was given back unstarted.
func (l *leases) drop(s *slot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.expire != nil {
		s.expire.Stop()
	}
	delete(l.held, s)
}

// renewing starts the dispatcher's renewer and returns what stops it.
func (d *dispatcher) renewing() (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(d.w.cfg.Lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				d.renew()
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// renew extends the leases of the claims held (resends' too) as if each
// were claimed now on its claim's clock (the claim's at plus the real time
// since), and moves the ends of the turns whose lease it renewed.
func (d *dispatcher) renew() {
	w, l := d.w, &d.leases
	l.mu.Lock()
	var claims []store.Claim
	var resends []store.ResendClaim
	bySlot := make(map[store.ResendClaim]*slot, len(l.held)) // a turn's claim with seq 0
	var skew time.Duration                                   // the claims' clocks against the wall's: the earliest until serves all
	first := true
	for s := range l.held {
		if first || s.at.Sub(s.claimedAt) < skew {
			skew, first = s.at.Sub(s.claimedAt), false
		}
		if s.resend != nil {
			c := s.resend.Claim()
			resends, bySlot[c] = append(resends, c), s
		} else {
			c := s.st.Claim()
			claims, bySlot[store.ResendClaim{Claim: c}] = append(claims, c), s
		}
	}
	l.mu.Unlock()
	if first {
		return
	}
	sent := time.Now()
	until := sent.Add(skew + w.cfg.Lease)
	ctx, cancel := context.WithTimeout(d.ctx, w.cfg.Lease/3)
	defer cancel()
	var renewed, asked []store.ResendClaim // asked: the claims of the calls that answered
	if len(claims) > 0 {
		cs, err := w.store.Renew(ctx, until, claims)
		if err != nil {
			w.cfg.Logger.Warn("herald: cannot renew the leases of the claims held; a turn ends at its lease's end", "namespace", w.namespace,
				"claims", len(claims), "err", err)
		} else {
			for _, c := range claims {
				asked = append(asked, store.ResendClaim{Claim: c})
			}
		}
		for _, c := range cs {
			renewed = append(renewed, store.ResendClaim{Claim: c})
		}
	}
	if len(resends) > 0 {
		cs, err := w.store.RenewResends(ctx, until, resends)
		if err != nil {
			w.cfg.Logger.Warn("herald: cannot renew the leases of the resends held; a resend ends at its lease's end", "namespace", w.namespace,
				"resends", len(resends), "err", err)
		} else {
			asked = append(asked, resends...)
		}
		renewed = append(renewed, cs...)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := make(map[store.ResendClaim]bool, len(renewed))
	for _, c := range renewed {
		kept[c] = true
		s := bySlot[c]
		if _, ok := l.held[s]; !ok {
			continue // ended meanwhile
		}
		s.wallUntil = until.Add(-s.at.Sub(s.claimedAt))
		if s.expire != nil && s.expire.Stop() { // not fired: the turn still runs under its lease
			s.expire.Reset(time.Until(s.wallUntil.Add(-w.cfg.Lease / 10)))
		}
	}
	for _, c := range asked {
		if kept[c] {
			continue
		}
		// The store answered without it: its lease was taken (an update,
		// pause, rewind; another worker past its end). No write of the turn
		// can land, so it stops sending now, not at its lease's end.
		s := bySlot[c]
		if _, ok := l.held[s]; !ok {
			continue // ended meanwhile
		}
		if s.cancel != nil {
			s.cancel(errLeaseTaken)
		} else {
			s.taken = true // not started: it starts cancelled (run)
		}
	}
}
