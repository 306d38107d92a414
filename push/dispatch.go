package push

import (
	"context"
	"time"

	"github.com/heraldpush/herald/journal"
)

// Run is the daemon's dispatcher (package doc, "The dispatcher"), on the
// wall clock: it keeps up to MaxInFlight turns running and refills a freed
// slot with a fresh claim at once, each claim with its own lease and budget
// of half the lease. It claims on Wake, on a turn's end and while the last
// claim left work due; with nothing due it waits for one of those or for
// every to pass.
//
// On ctx's end it claims nothing more, lets the turns in flight finish or
// time out (they start no new record), saves their progress and returns nil.
// Store and journal errors are logged once (until a claim succeeds with no
// turn failing since the previous one) and claims retried every interval,
// so a database outage does not stop the loop. Errors: journal.ErrInvalid
// for every <= 0.
func (w *Worker) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return journal.Invalid("every", "is %v: it must be positive", every)
	}
	d := &dispatcher{w: w, ctx: context.WithoutCancel(ctx), stop: ctx.Done(),
		ended: make(chan turnEnd, w.opts.maxInFlight), refill: max(1, w.opts.maxInFlight/4)}
	return d.run(every)
}

// dispatcher is Run's state, owned by Run's goroutine alone: turns report
// their end on a channel and touch nothing of it.
type dispatcher struct {
	w      *Worker
	ctx    context.Context // turns keep it when Run's ends: what is in flight finishes and is saved
	stop   <-chan struct{} // Run's ctx.Done(): no new claim, no new record
	ended  chan turnEnd    // buffered for MaxInFlight, so a turn never waits to report
	refill int             // free slots that make a claim worth its query

	running  int  // turns in flight
	due      bool // a claim now may find work
	resting  bool // the last claim failed: only the interval or a wake claims again
	failures int  // errors since the loop last worked (logged at the first)
	turnErr  bool // a turn failed since the last claim
}

type turnEnd struct {
	host string
	rep  SweepReport
	err  error
}

func (d *dispatcher) run(every time.Duration) error {
	timer := time.NewTimer(every)
	defer timer.Stop()
	stop := d.stop
	d.due = true
	for {
		if stop != nil && d.due && d.canClaim() {
			d.claim()
			timer.Reset(every)
		}
		if stop == nil && d.running == 0 {
			return nil
		}
		select {
		case <-stop:
			stop = nil // claim nothing more; wait for the turns in flight
		case e := <-d.ended:
			d.end(e)
		case <-d.w.wake:
			d.due, d.resting = true, false
		case <-timer.C:
			d.due, d.resting = true, false
			timer.Reset(every)
		}
	}
}

// canClaim says whether enough slots are free for a claim.
func (d *dispatcher) canClaim() bool {
	free := d.w.opts.maxInFlight - d.running
	return free > 0 && (free >= d.refill || d.running == 0)
}

// claim fills the free slots with fresh claims, each turn in its own
// goroutine under this claim's lease and budget.
func (d *dispatcher) claim() {
	w := d.w
	limit := min(w.opts.maxInFlight-d.running, w.opts.sweepLimit)
	at := time.Now()
	batch, err := w.claim(d.ctx, at, limit, true)
	if err != nil {
		d.due, d.resting = false, true
		d.fail(err)
		return
	}
	if d.failures > 0 && !d.turnErr {
		w.opts.logger.Info("herald: claims recovered", "namespace", w.namespace, "errors", d.failures)
		d.failures = 0
	}
	d.turnErr = false
	// More may be due now only if this claim found some and was full; a
	// claim capped by hosts finds no more until one of their turns ends.
	d.due = len(batch.Registrations) > 0 && (batch.More || len(batch.Registrations) >= limit)
	deadline := time.Now().Add(w.opts.lease / 2)
	for _, st := range batch.Registrations {
		host := st.Host()
		entry := w.hosts.enter(host)
		d.running++
		go func() {
			rep, err := w.serve(d.ctx, d.stop, at, deadline, st, entry)
			d.ended <- turnEnd{host: host, rep: rep, err: err}
		}()
	}
}

// end accounts for a turn that ended: its slot and its host's place are
// free, so a claim may find work (a backlog, or a host now under its cap).
func (d *dispatcher) end(e turnEnd) {
	d.running--
	d.w.hosts.leave(e.host)
	if e.err != nil {
		d.turnErr = true
		d.fail(e.err)
	}
	if !d.resting {
		d.due = true
	}
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
