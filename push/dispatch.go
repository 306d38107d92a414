package push

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldpush/herald/journal"
)

// dispatcher is a worker's one scheduler (package doc, "Scheduling"). Only
// the goroutine that drives it touches its state; turns report on ended.
type dispatcher struct {
	w     *Worker
	ctx   context.Context // the turns': Run's outlives its caller's, so what is in flight finishes and is saved
	stop  <-chan struct{} // no new claim, no new record
	ended chan turnEnd

	running int
	ready   []claimed      // claimed, not started: each starts when a slot and its host allow, oldest first
	perHost map[string]int // turns running per host
	waiting int64          // this dispatcher's part of Worker.waiting
	rep     SweepReport    // what the ended turns did
	err     error          // the first turn's error

	// Run's alone.
	refill   int    // turn ends that make a claim worth its query
	due      bool   // a claim now may find work: a wake, the interval, or a full claim
	ends     int    // turns ended since the last claim: each may have left work
	capped   bool   // a host was at its cap after the last claim: turn ends free room for what Due held back
	claimed  uint64 // the worker's Wake count when the last claim began
	resting  bool   // the last claim failed: only the interval or a wake claims again
	failures int    // errors since the loop last worked (logged at the first)
	turnErr  bool   // a turn failed since the last claim
}

// claimed is a registration the dispatcher holds a lease on; its budget and
// its lease's end count from claimedAt, when Due returned.
type claimed struct {
	st            Status
	at, claimedAt time.Time
	host          string
	entry         *hostEntry
	wakes         uint64 // the worker's Wake count before the claim
}

type turnEnd struct {
	c     claimed
	wakes uint64 // the worker's Wake count when the turn last read its stream
	rep   SweepReport
	err   error
}

func (w *Worker) newDispatcher(ctx context.Context, stop <-chan struct{}) *dispatcher {
	return &dispatcher{w: w, ctx: ctx, stop: stop, ended: make(chan turnEnd, w.opts.maxInFlight), perHost: map[string]int{}}
}

// RunOnce is one sweep at instant at: it claims up to limit due
// registrations and serves them (package doc, "Turns"). A store or journal
// error ends only its own turn, uncharged; RunOnce returns the first with the
// report of all that was done. If ctx ends, what is in flight is abandoned
// uncounted, progress saved, and ctx's error returned. Errors:
// journal.ErrInvalid for limit < 1 or a zero at.
func (w *Worker) RunOnce(ctx context.Context, at time.Time, limit int) (rep SweepReport, err error) {
	if limit < 1 {
		return rep, journal.Invalid("limit", "is %d: it must be at least 1", limit)
	}
	if at.IsZero() {
		return rep, journal.Invalid("at", "is the zero time")
	}
	ctx, span := w.startSweep(ctx)
	defer func() { endSweep(span, rep, err) }()
	if h := w.opts.hooks.Sweep; h != nil {
		started := time.Now()
		defer func() { h(at, rep, time.Since(started), err) }()
	}
	d := w.newDispatcher(ctx, ctx.Done())
	batch, err := d.claim(at, limit, false)
	if err != nil {
		return rep, err
	}
	for len(d.ready) > 0 || d.running > 0 {
		d.start()
		d.end(<-d.ended)
	}
	d.rep.Saturated, d.rep.Unserved, d.rep.Registrations = batch.More, batch.Unserved, len(batch.Registrations)
	if d.err == nil && ctx.Err() != nil {
		d.err = ctx.Err()
	}
	return d.rep, d.err
}

// Run is the daemon's loop (package doc, "Scheduling"), claiming at least
// every interval. When ctx ends it gives back the claims not started, lets
// the turns in flight finish and returns nil. A store or journal error is
// logged once until claims succeed again with no turn failing. Errors:
// journal.ErrInvalid for every <= 0.
func (w *Worker) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return journal.Invalid("every", "is %v: it must be positive", every)
	}
	d := w.newDispatcher(context.WithoutCancel(ctx), ctx.Done())
	d.refill = max(1, min(w.opts.maxInFlight/4, w.opts.maxPerHost/2))
	timer := time.NewTimer(every)
	defer timer.Stop()
	stop := d.stop
	d.due = true
	for {
		if stop != nil {
			d.start()
			if d.canClaim() {
				d.refillClaims()
				d.start()
				timer.Reset(every)
			}
		} else {
			d.release()
			if d.running == 0 {
				return nil
			}
		}
		select {
		case <-stop:
			stop = nil // claim and start nothing more; wait for the turns in flight
		case e := <-d.ended:
			d.end(e)
		case <-w.wake:
			d.due, d.resting = true, false
		case <-timer.C:
			d.due, d.resting = true, false
			timer.Reset(every)
		}
	}
}

// claim asks the store for up to limit registrations due at at, under a
// lease owner of its own (capped: no more of a host than the worker may
// still serve), and holds them ready.
func (d *dispatcher) claim(at time.Time, limit int, capped bool) (DueBatch, error) {
	w := d.w
	q := DueQuery{At: at, Limit: limit, Namespace: w.namespace, Owner: fmt.Sprintf("%s#%d", w.opts.owner, w.claims.Add(1)),
		LeaseUntil: at.Add(w.opts.lease)}
	if capped {
		q.MaxPerHost, q.Busy = w.opts.maxPerHost, w.perHost.busy()
	}
	wakes := w.wakes.Load() // before the claim: a Wake during it may be for a registration it missed
	batch, err := w.store.Due(d.ctx, q)
	if err != nil {
		err = fmt.Errorf("push: claim due registrations of %s: %w", w.namespace, err)
	}
	if h := w.opts.hooks.Claim; h != nil {
		h(at, len(batch.Registrations), err)
	}
	if err != nil {
		return batch, err
	}
	for _, h := range batch.Hosts {
		w.book.learn(h) // an answer from one of these is told to the store (turn.hostAnswered)
	}
	claimedAt := time.Now() // after Due returned: the turns' budget and shared pages count from it
	for _, st := range batch.Registrations {
		host := st.Host()
		d.ready = append(d.ready, claimed{st: st, at: at, claimedAt: claimedAt, host: host, entry: w.perHost.enter(host), wakes: wakes})
	}
	return batch, nil
}

// start runs ready claims in the free slots, oldest first, skipping hosts at
// their cap, and counts in Worker.waiting those a freed slot would start.
func (d *dispatcher) start() {
	max, perHost := d.w.opts.maxInFlight, d.w.opts.maxPerHost
	var starts []claimed
	kept := d.ready[:0]
	var startable int64
	for _, c := range d.ready {
		switch {
		case d.perHost[c.host] >= perHost:
			kept = append(kept, c)
		case d.running < max:
			d.running++
			d.perHost[c.host]++
			c.entry.queued.Add(-1)
			starts = append(starts, c)
		default:
			kept = append(kept, c)
			startable++
		}
	}
	d.ready = kept
	// Counted before the turns start, so that none sees another pass's count.
	d.w.waiting.Add(startable - d.waiting)
	d.waiting = startable
	for _, c := range starts {
		go func() { d.ended <- d.serve(c) }()
	}
}

// serve runs the turn of claim c.
func (d *dispatcher) serve(c claimed) turnEnd {
	w := d.w
	w.turns.Add(1)
	defer w.turns.Add(-1)
	started := time.Now()
	e := turnEnd{c: c, wakes: c.wakes}
	t := turn{w: w, at: c.at, stop: d.stop, deadline: c.claimedAt.Add(w.opts.lease / 2), reg: c.st.Registration, head: c.st.Head,
		claim: c.st.Claim(), host: c.entry, hostName: c.host, wakes: &e.wakes}
	ctx := withReadClaim(d.ctx, c.claimedAt, c.st.Head) // pages read since the claim may serve it (pages.go)
	ctx, cancel := context.WithDeadlineCause(ctx, c.claimedAt.Add(w.opts.lease-w.opts.lease/10), errLeaseEnding)
	defer cancel()
	ctx, span := t.startTurn(ctx)
	e.err = t.run(ctx)
	endTurn(span, t.rep, e.err)
	t.rep.Registrations = 1
	if e.err != nil {
		t.rep.Errors = 1
		e.err = fmt.Errorf("push: %s: %w", Name(c.st.Stream, c.st.ID), e.err)
	}
	if h := w.opts.hooks.Turn; h != nil {
		h(c.at, t.rep, time.Since(started), e.err)
	}
	e.rep = t.rep
	return e
}

// end accounts for a turn that ended. Under Run a claim may then find work:
// a backlog, or a wake the turn's lease hid from the claims made meanwhile.
func (d *dispatcher) end(e turnEnd) {
	d.running--
	d.perHost[e.c.host]--
	d.w.perHost.leave(e.c.host)
	d.rep.add(e.rep)
	if e.err != nil && d.err == nil {
		d.err = e.err
	}
	if d.refill == 0 {
		return // RunOnce
	}
	if e.err != nil {
		d.turnErr = true
		d.fail(e.err)
	}
	if d.resting {
		return
	}
	d.ends++
	if (e.wakes != d.w.wakes.Load() && d.claimed > e.wakes) || e.rep.Backlog > 0 {
		d.due = true
	}
}

// canClaim says whether a claim of Run is worth its query: under twice
// MaxInFlight claims, fewer than half of them ready, and work may be due (a
// wake, the interval, a full claim, a backlog; or, with a host at its cap or
// troubled, refill turn ends or none running). Otherwise the last claim took
// all that was due.
func (d *dispatcher) canClaim() bool {
	max := d.w.opts.maxInFlight
	if d.running+len(d.ready) >= 2*max || (len(d.ready) >= (max+1)/2 && d.running > 0) {
		return false
	}
	endsMayFind := d.capped || d.w.book.size.Load() > 0 // a probe's answer releases a troubled host's registrations
	return d.due || (endsMayFind && (d.ends >= d.refill || (d.ends > 0 && d.running == 0)))
}

// refillClaims takes fresh claims of Run up to what the dispatcher may hold.
func (d *dispatcher) refillClaims() {
	w := d.w
	d.claimed = w.wakes.Load()
	limit := min(2*w.opts.maxInFlight-d.running-len(d.ready), w.opts.sweepLimit)
	batch, err := d.claim(time.Now(), limit, true)
	if err != nil {
		d.due, d.resting, d.ends = false, true, 0
		d.fail(err)
		return
	}
	if d.failures > 0 && !d.turnErr {
		w.opts.logger.Info("herald: claims recovered", "namespace", w.namespace, "errors", d.failures)
		d.failures = 0
	}
	d.turnErr, d.ends = false, 0
	// More may be due only if this claim was full.
	d.due = len(batch.Registrations) > 0 && (batch.More || len(batch.Registrations) >= limit)
	_, _, atCap := w.perHost.load()
	d.capped = atCap > 0
}

// release gives back the claims never started (Run is stopping), so that
// another worker need not wait out their lease.
func (d *dispatcher) release() {
	d.w.waiting.Add(-d.waiting)
	d.waiting = 0
	for _, c := range d.ready {
		c.entry.queued.Add(-1)
		d.w.perHost.leave(c.host)
		if err := d.w.store.Advance(d.ctx, c.st.Claim(), c.st.NextSeq); err != nil {
			d.w.opts.logger.Debug("herald: could not release an unstarted claim; its lease will expire", "stream", c.st.Stream,
				"registration", c.st.ID, "err", err)
		}
	}
	d.ready = nil
}

func (d *dispatcher) fail(err error) {
	d.failures++
	log := d.w.opts.logger
	if d.failures == 1 {
		log.Error("herald: store or journal error; retrying every interval until it recovers", "namespace", d.w.namespace, "err", err)
	} else {
		log.Debug("herald: store or journal error again", "namespace", d.w.namespace, "errors", d.failures, "err", err)
	}
}

// SweepReport counts what one RunOnce, or one turn (Hooks.Turn), did.
type SweepReport struct {
	Registrations int  `json:"registrations"` // registrations claimed and served
	Records       int  `json:"records"`       // records acknowledged (the cursor moved past them)
	Deliveries    int  `json:"deliveries"`    // messages accepted (2xx)
	Retries       int  `json:"retries"`       // registrations that failed and will retry later
	Completed     int  `json:"completed"`     // registrations whose final record was acknowledged (now deleted)
	Parked        int  `json:"parked"`        // registrations parked (ceiling reached or permanent refusal)
	Skipped       int  `json:"skipped"`       // messages rejected and moved past by the skip policy
	Unserved      int  `json:"unserved"`      // due registrations of other namespaces, left to their workers
	Errors        int  `json:"errors"`        // turns ended by a store or journal error
	HostFailures  int  `json:"host_failures"` // turns ended by a host-level failure (no attempt charged; see HostStore)
	LeasesLost    int  `json:"leases_lost"`   // turns whose lease was taken over (by another worker or an operator) before they could save
	Backlog       int  `json:"backlog"`       // turns that ended with records still behind the cursor (a claim waited for the slot, or the budget was spent): sweep again soon
	Saturated     bool `json:"saturated"`     // more were due than the limit: sweep again soon
}

// NeedsAttention reports whether a scheduler or operator should act: sweep
// again soon (Saturated, Backlog), or see to a parked registration.
func (r SweepReport) NeedsAttention() bool { return r.Saturated || r.Backlog > 0 || r.Parked > 0 }

func (r *SweepReport) add(t SweepReport) {
	r.Records += t.Records
	r.Deliveries += t.Deliveries
	r.Retries += t.Retries
	r.Completed += t.Completed
	r.Parked += t.Parked
	r.Skipped += t.Skipped
	r.LeasesLost += t.LeasesLost
	r.Backlog += t.Backlog
	r.HostFailures += t.HostFailures
	r.Errors += t.Errors
}
