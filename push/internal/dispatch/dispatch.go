package dispatch

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push/internal/hosts"
	"github.com/heraldpush/herald/push/internal/pages"
	"github.com/heraldpush/herald/push/wire"
	"github.com/heraldpush/herald/store"
)

// dispatcher runs claims as turns in slots (package doc, "Scheduling"). The
// goroutine of RunOnce or Run drives it and alone touches its fields; a turn
// reports its end on ended, and a send that goes slow nudges slowed.
type dispatcher struct {
	w      *Engine
	ctx    context.Context // the turns': Run's outlives its caller's, so what is in flight finishes and is saved
	stop   <-chan struct{} // no new claim, no new record
	ended  chan turnEnd
	slowed chan struct{} // capacity 1: some running slot's send passed SlowAfter

	ready     []*slot            // claimed, not started: each starts when a slot and its host allow, oldest first
	readySlow int                // of them, those of slow hosts, which wait for the slow budget (start)
	running   map[*slot]struct{} // turns running
	fast      int                // of them, those counted against MaxInFlight
	slow      int                // of them, those in the slow budget (MaxSlow)
	perHost   map[string]int     // turns running per host
	waiting   [2]int64           // this dispatcher's part of Engine.waiting
	rep       wire.SweepReport   // what the ended turns did
	err       error              // the first turn's error
	leases    leases             // the claims held, which a goroutine of its own renews (leases.go)
	live      bool               // Run's: turns keep the wall clock (turn.now)
}

// slot is one claim, from Due to its turn's end.
type slot struct {
	st            store.Status
	at, claimedAt time.Time // the claim's instant; when Due returned (the turn's budget counts from it)
	host          string
	entry         *hosts.Entry
	wakes         uint64        // the worker's Wake count before the claim
	resend        *store.Resend // a resend's claim (resend.go), not a turn's: st is its registration

	// Under the dispatcher's leases.mu: the lease's end on the wall clock
	// (renew moves it), once the turn started what ends it there, and
	// whether a renewal found the lease taken before the turn started.
	wallUntil time.Time
	expire    *time.Timer
	cancel    context.CancelCauseFunc // the turn's context's (errLeaseEnding, errLeaseTaken)
	taken     bool

	nudge    chan<- struct{} // the dispatcher's slowed
	wentSlow atomic.Bool     // a send of the turn passed SlowAfter
	prompt   atomic.Bool     // a send of the turn was answered within SlowAfter
	yield    atomic.Bool     // slow past the slow budget (or with none): the turn gives its slot up at its next record if a claim waits
	inSlow   atomic.Bool     // slow, for the turn: the claims it gives way to are those waiting for the slow budget (turn.wanted)
	slow     bool            // the dispatcher's: counted in the slow budget
	slowHost bool            // its host was slow when claimed (hosts.Table.Slow): it starts in the slow budget
}

// sending arms the slot's slow watch for one send, which goes slow after
// d (push.SlowAfter); the caller stops the timer when the send returns.
func (s *slot) sending(d time.Duration) *time.Timer {
	return time.AfterFunc(d, func() {
		if s.wentSlow.CompareAndSwap(false, true) {
			select {
			case s.nudge <- struct{}{}:
			default: // a nudge is pending: the dispatcher looks at every slot
			}
		}
	})
}

// turnEnd is what a turn reports when it ends.
type turnEnd struct {
	s     *slot
	wakes uint64    // the worker's Wake count when the turn last read its stream
	paced time.Time // its registration's rate holds the records left until then
	rep   wire.SweepReport
	err   error
}

func (w *Engine) newDispatcher(ctx context.Context, stop <-chan struct{}) *dispatcher {
	return &dispatcher{w: w, ctx: ctx, stop: stop, ended: make(chan turnEnd, w.cfg.MaxInFlight+w.cfg.MaxSlow),
		slowed: make(chan struct{}, 1), running: map[*slot]struct{}{}, perHost: map[string]int{}}
}

// RunOnce is push.Worker.RunOnce: one claim at at, served to its end.
func (w *Engine) RunOnce(ctx context.Context, at time.Time, limit int) (rep wire.SweepReport, err error) {
	if limit < 1 {
		return rep, journal.Invalid("limit", "is %d: it must be at least 1", limit)
	}
	if at.IsZero() {
		return rep, journal.Invalid("at", "is the zero time")
	}
	ctx, span := w.startSweep(ctx)
	defer func() { endSweep(span, rep, err) }()
	if h := w.cfg.Hooks.Sweep; h != nil {
		started := time.Now()
		defer func() { h(at, rep, time.Since(started), err) }()
	}
	d := w.newDispatcher(ctx, ctx.Done())
	batch, resends, err := d.claim(at, limit, false, true)
	if err != nil && len(d.ready)+len(d.running) == 0 {
		return rep, err
	}
	d.err = err // the resends' claim failed: the registrations claimed are served
	defer d.renewing()()
	for d.start(); len(d.ready) > 0 || len(d.running) > 0; d.start() {
		select {
		case e := <-d.ended:
			d.end(e)
		case <-d.slowed:
			d.demote()
		}
	}
	d.rep.Saturated, d.rep.Unserved, d.rep.Registrations = batch.More || resends.More, batch.Unserved, len(batch.Registrations)
	if d.err == nil && ctx.Err() != nil {
		d.err = ctx.Err()
	}
	return d.rep, d.err
}

// claim asks the store for up to limit registrations due at at, and with
// resends up to limit pending resends, each under a lease owner of its own,
// and holds them ready. Run's claims are capped (no more of a host than the
// worker may still serve) and count no Unserved; RunOnce's report has it. A
// failed claim of resends is returned with the registrations claimed.
func (d *dispatcher) claim(at time.Time, limit int, capped, resends bool) (store.DueBatch, store.ResendBatch, error) {
	w := d.w
	q := store.DueQuery{At: at, Limit: limit, Namespace: w.namespace, Owner: d.owner(),
		LeaseUntil: at.Add(w.cfg.Lease), CountUnserved: !capped}
	if capped {
		q.MaxPerHost, q.Busy = w.cfg.MaxPerHost, w.perHost.Busy()
	}
	wakes := w.wakes.Load() // before the claim: a Wake during it may be for a registration it missed
	batch, err := w.store.Due(d.ctx, q)
	if err != nil {
		err = fmt.Errorf("push: claim due registrations of %s: %w", w.namespace, err)
		if h := w.cfg.Hooks.Claim; h != nil {
			h(at, 0, err)
		}
		return batch, store.ResendBatch{}, err
	}
	var rb store.ResendBatch
	if resends {
		q.Owner = d.owner()
		if rb, err = w.store.DueResends(d.ctx, q); err != nil {
			err = fmt.Errorf("push: claim pending resends of %s: %w", w.namespace, err)
		}
	}
	for _, h := range batch.Hosts {
		w.book.Learn(h) // an answer from one of these is told to the store (turn.hostAnswered)
	}
	claimedAt := time.Now() // after Due returned: shared pages and the lease's wall-clock end count from it
	n := len(d.ready)
	add := func(st store.Status, rs *store.Resend) {
		host := st.Host()
		d.ready = append(d.ready, &slot{st: st, at: at, claimedAt: claimedAt, host: host, entry: w.perHost.Enter(host),
			wakes: wakes, resend: rs, wallUntil: claimedAt.Add(w.cfg.Lease), nudge: d.slowed,
			slowHost: w.cfg.MaxSlow > 0 && w.perHost.Slow(host, claimedAt)})
	}
	for _, st := range batch.Registrations {
		add(st, nil)
	}
	for i := range rb.Resends {
		add(store.Status{Registration: rb.Resends[i].Registration}, &rb.Resends[i])
	}
	for _, s := range d.ready[:n] {
		// Once a claim, not at every start (a lookup under the table's
		// lock for each waiting claim): a claim whose host's mark ended
		// while it waited waits for a regular slot.
		if s.slowHost && !w.perHost.Slow(s.host, claimedAt) {
			s.slowHost = false
		}
	}
	d.leases.hold(d.ready[n:])
	d.start() // so that the hook is told once the claims hold their slots or wait for one (Engine.waiting)
	if h := w.cfg.Hooks.Claim; h != nil {
		h(at, len(batch.Registrations), err)
	}
	return batch, rb, err
}

// owner is a new claim's lease owner: the worker's, numbered.
func (d *dispatcher) owner() string { return fmt.Sprintf("%s#%d", d.w.cfg.Owner, d.w.claims.Add(1)) }

// start runs ready claims in the free slots, oldest first, skipping hosts at
// their cap, and counts in Engine.waiting those a freed slot would start. A
// claim of a slow host (slot.slowHost) starts in the slow budget, or waits
// for it: a host that went slow takes no slot of the healthy ones again.
func (d *dispatcher) start() {
	max, maxSlow, perHost := d.w.cfg.MaxInFlight, d.w.cfg.MaxSlow, d.w.cfg.MaxPerHost
	var starts []*slot
	kept := d.ready[:0]
	var startable [2]int64
	d.readySlow = 0
	for _, s := range d.ready {
		switch {
		case d.perHost[s.host] >= perHost:
			kept = append(kept, s)
			if s.slowHost {
				d.readySlow++
			}
		case s.slowHost && d.slow < maxSlow:
			s.slow = true
			s.inSlow.Store(true) // before its turn starts
			d.slow++
			d.w.slowTurns.Add(1)
			starts = append(starts, d.run(s))
		case s.slowHost:
			kept = append(kept, s)
			d.readySlow++
			startable[1]++
		case d.fast < max:
			d.fast++
			starts = append(starts, d.run(s))
		default:
			kept = append(kept, s)
			startable[0]++
		}
	}
	clear(d.ready[len(kept):])
	d.ready = kept
	// Counted before the turns start, so that none sees another pass's count.
	for i := range startable {
		d.w.waiting[i].Add(startable[i] - d.waiting[i])
		d.waiting[i] = startable[i]
	}
	for _, s := range starts {
		ctx := pages.WithClaim(d.ctx, s.claimedAt, s.st.Head) // pages read since the claim may serve it (internal/pages)
		ctx = d.leases.run(ctx, s, d.w.cfg.Lease)
		go func() { d.ended <- d.serve(ctx, s) }()
	}
}

// run counts s as running, for start, which has counted its budget.
func (d *dispatcher) run(s *slot) *slot {
	d.perHost[s.host]++
	d.running[s] = struct{}{}
	s.entry.Queued.Add(-1)
	return s
}

// demote moves the turns whose send went slow from MaxInFlight to the slow
// budget, freeing their slots for the claims that wait, even when the
// budget is full: a send cannot be hurried, and one kept in its slot would
// hold it to the request's timeout, so that more silent hosts than MaxSlow
// would hold every slot. A turn past the budget yields its slot at its next
// record (turn.yields), as does every slow turn with no slow budget
// (MaxSlow 0), which keeps it in its slot.
func (d *dispatcher) demote() {
	for s := range d.running {
		if s.slow || !s.wentSlow.Load() || s.yield.Load() {
			continue
		}
		d.w.perHost.MarkSlow(s.host, time.Now())
		if d.w.cfg.MaxSlow > 0 {
			s.slow = true
			s.inSlow.Store(true)
			d.fast--
			d.slow++
			d.w.slowTurns.Add(1)
		}
		if d.slow > d.w.cfg.MaxSlow || !s.slow {
			s.yield.Store(true)
		}
		if h := d.w.cfg.Hooks.Slow; h != nil {
			h(s.st.Registration, s.yield.Load())
		}
	}
}

// serve runs the turn of slot s under ctx.
func (d *dispatcher) serve(ctx context.Context, s *slot) turnEnd {
	w := d.w
	w.turns.Add(1)
	defer w.turns.Add(-1)
	started := time.Now()
	e := turnEnd{s: s, wakes: s.wakes}
	t := turn{w: w, at: s.at, stop: d.stop, deadline: w.cfg.Now().Add(w.cfg.Lease / 2), reg: s.st.Registration, head: s.st.Head,
		claim: s.st.Claim(), slot: s, host: s.entry, hostName: s.host, wakes: &e.wakes, live: d.live, lapsed: s.st.Lapsed}
	defer s.cancel(nil)
	if s.resend != nil {
		t.claim = s.resend.Claim().Claim
		if e.err = t.resend(ctx, *s.resend); e.err != nil {
			t.rep.Errors = 1
			e.err = fmt.Errorf("push: resend #%d to %s: %w", s.resend.Seq, store.Name(s.st.Stream, s.st.ID), e.err)
		}
		e.rep = t.rep
		return e
	}
	ctx, span := t.startTurn(ctx)
	e.err = t.run(ctx)
	endTurn(span, t.rep, e.err)
	t.rep.Registrations = 1
	if e.err != nil {
		t.rep.Errors = 1
		e.err = fmt.Errorf("push: %s: %w", store.Name(s.st.Stream, s.st.ID), e.err)
	}
	if h := w.cfg.Hooks.Turn; h != nil {
		h(s.at, t.rep, time.Since(started), e.err)
	}
	e.rep, e.paced = t.rep, t.paced
	return e
}

// end accounts for a turn that ended.
func (d *dispatcher) end(e turnEnd) {
	s := e.s
	d.leases.drop(s)
	delete(d.running, s)
	if s.slow {
		d.slow--
		d.w.slowTurns.Add(-1)
	} else {
		d.fast--
	}
	d.perHost[s.host]--
	if d.perHost[s.host] == 0 {
		delete(d.perHost, s.host)
	}
	switch {
	case s.wentSlow.Load():
		d.w.perHost.MarkSlow(s.host, time.Now())
	case s.prompt.Load() && s.slowHost:
		d.w.perHost.Answered(s.host) // it answered within SlowAfter: a slot of the healthy ones again
	}
	d.w.perHost.Leave(s.host)
	addReport(&d.rep, e.rep)
	if e.err != nil && d.err == nil {
		d.err = e.err
	}
}

// release gives back the claims never started (Run is stopping), so that
// another worker need not wait out their lease; but a resend's, which stays
// pending, and a rate-limited one that took a lapsed lease: released, the
// next claim would not know of the lost turn's burst (turn.newPace).
func (d *dispatcher) release() {
	for i := range d.waiting {
		d.w.waiting[i].Add(-d.waiting[i])
		d.waiting[i] = 0
	}
	d.readySlow = 0
	for _, s := range d.ready {
		d.leases.drop(s)
		s.entry.Queued.Add(-1)
		d.w.perHost.Leave(s.host)
		if s.resend != nil || s.st.Lapsed && !s.st.Rate.IsZero() {
			continue // its lease lapses again
		}
		if err := d.w.store.Advance(d.ctx, s.st.Claim(), s.st.NextSeq); err != nil {
			d.w.cfg.Logger.Debug("herald: could not release an unstarted claim; its lease will expire", "stream", s.st.Stream,
				"registration", s.st.ID, "err", err)
		}
	}
	d.ready = nil
}

// addReport adds a turn's report t to r, a sweep's.
func addReport(r *wire.SweepReport, t wire.SweepReport) {
	r.Records += t.Records
	r.Deliveries += t.Deliveries
	r.Retries += t.Retries
	r.Completed += t.Completed
	r.Parked += t.Parked
	r.Skipped += t.Skipped
	r.Resends += t.Resends
	r.LeasesLost += t.LeasesLost
	r.Backlog += t.Backlog
	r.Paced += t.Paced
	r.HostFailures += t.HostFailures
	r.Errors += t.Errors
}
