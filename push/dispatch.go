package push

import (
	"context"
	"time"

	"github.com/heraldpush/herald/journal"
)

// Run is the daemon's dispatcher (package doc, "The dispatcher"), on the
// wall clock: it keeps up to MaxInFlight turns running and refills a freed
// slot at once, each claim with its own lease and budget of half the lease.
// It claims on Wake, on a turn's end that may have left work (see
// canClaim) and while the last claim left work due; with nothing due it
// waits for one of those or for every to pass.
//
// On ctx's end it claims nothing more, gives back the claims it had not
// started, lets the turns in flight finish or time out (they start no new
// record), saves their progress and returns nil.
// Store and journal errors are logged once (until a claim succeeds with no
// turn failing since the previous one) and claims retried every interval,
// so a database outage does not stop the loop. Errors: journal.ErrInvalid
// for every <= 0.
func (w *Worker) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return journal.Invalid("every", "is %v: it must be positive", every)
	}
	d := &dispatcher{w: w, ctx: context.WithoutCancel(ctx), stop: ctx.Done(), ended: make(chan turnEnd, w.opts.maxInFlight),
		refill: max(1, min(w.opts.maxInFlight/4, w.opts.maxPerHost/2))}
	return d.run(every)
}

// dispatcher is Run's state, owned by Run's goroutine alone: turns report
// their end on a channel and touch nothing of it.
type dispatcher struct {
	w      *Worker
	ctx    context.Context // turns keep it when Run's ends: what is in flight finishes and is saved
	stop   <-chan struct{} // Run's ctx.Done(): no new claim, no new record
	ended  chan turnEnd    // buffered for MaxInFlight, so a turn never waits to report
	refill int             // turn ends that make a claim worth its query

	running  int       // turns in flight, at most MaxInFlight
	ready    []claimed // claimed, not started: each starts as a slot frees, oldest first
	due      bool      // a claim now may find work: a wake, the interval, or a full claim
	ends     int       // turns ended since the last claim: each may have left work
	capped   bool      // a host was at its cap after the last claim: turn ends free room for what Due held back
	claimed  uint64    // the worker's Wake count when the last claim began
	resting  bool      // the last claim failed: only the interval or a wake claims again
	failures int       // errors since the loop last worked (logged at the first)
	turnErr  bool      // a turn failed since the last claim
}

// claimed is a registration the dispatcher holds a lease on, with its
// claim's instant and when it was made (its budget counts from that), and
// its place in the host table.
type claimed struct {
	st            Status
	at, claimedAt time.Time // the claim's instant (for the store); when its Due returned (real time)
	host          string
	entry         *hostEntry
	wakes         uint64 // the worker's Wake count before the claim
}

type turnEnd struct {
	host  string
	wakes uint64 // the worker's Wake count when the turn last read its stream (claimed.wakes, or a read again)
	rep   SweepReport
	err   error
}

func (d *dispatcher) run(every time.Duration) error {
	timer := time.NewTimer(every)
	defer timer.Stop()
	stop := d.stop
	d.due = true
	for {
		if stop != nil {
			d.start()
			if d.canClaim() {
				d.claim()
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
		case <-d.w.wake:
			d.due, d.resting = true, false
		case <-timer.C:
			d.due, d.resting = true, false
			timer.Reset(every)
		}
	}
}

// canClaim says whether a claim is worth its query. The dispatcher holds
// up to twice MaxInFlight claims, those it runs and as many ready to start,
// so that a slot is refilled at once from the ready ones; it claims when
// fewer than half are ready, on a wake, the interval or a full claim, or
// when a turn's end may have left work: at once for a turn with a backlog
// or one that a wake came after (end), and, when a host was at its cap
// after the last claim or one is troubled (endsMayFind), once refill turns
// ended (a quarter of MaxInFlight, at most half of MaxPerHost) or as soon
// as nothing runs. A claim's query costs about the same for 2 rows as for
// 200, so a high fan-out, or a host at its cap, costs one Store.Due per
// several turns, not one per turn; and otherwise the last claim took every
// due registration that no turn held, so a turn's end alone finds nothing
// new.
func (d *dispatcher) canClaim() bool {
	max := d.w.opts.maxInFlight
	if d.running+len(d.ready) >= 2*max || (len(d.ready) >= (max+1)/2 && d.running > 0) {
		return false
	}
	return d.due || (d.endsMayFind() && (d.ends >= d.refill || (d.ends > 0 && d.running == 0)))
}

// endsMayFind says whether turns' ends alone may have left work for a
// claim: a host was at its cap after the last claim (Due held the rest of
// its registrations back), or the worker knows of a troubled host (a
// probe's answer brings it up and releases its registrations).
func (d *dispatcher) endsMayFind() bool {
	return d.capped || d.w.book.size.Load() > 0
}

// claim takes fresh claims up to what the dispatcher may hold. Each counts
// on its host at once, so that the next claim's Busy includes it.
func (d *dispatcher) claim() {
	w := d.w
	limit := min(2*w.opts.maxInFlight-d.running-len(d.ready), w.opts.sweepLimit)
	wakes := w.wakes.Load() // before the claim: a Wake during it may be for a registration it missed
	d.claimed = wakes
	at := time.Now()
	batch, err := w.claim(d.ctx, at, limit, true)
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
	// More may be due now only if this claim found some and was full; a
	// claim capped by hosts finds no more until one of their turns ends.
	d.due = len(batch.Registrations) > 0 && (batch.More || len(batch.Registrations) >= limit)
	claimedAt := time.Now() // after Due returned: the turn's budget and its shared pages count from it
	w.waiting.Add(int64(len(batch.Registrations)))
	for _, st := range batch.Registrations {
		host := st.Host()
		d.ready = append(d.ready, claimed{st: st, at: at, claimedAt: claimedAt, host: host, entry: w.perHost.enter(host), wakes: wakes})
	}
	_, _, atCap := w.perHost.load()
	d.capped = atCap > 0
}

// start runs ready claims in the free slots, each turn in its own goroutine
// under its claim's lease and budget.
func (d *dispatcher) start() {
	n := min(len(d.ready), d.w.opts.maxInFlight-d.running)
	d.w.waiting.Add(-int64(n))
	for _, c := range d.ready[:n] {
		d.running++
		go func() {
			wakes := c.wakes
			rep, err := d.w.serve(d.ctx, d.stop, c.at, c.claimedAt, c.st, c.entry, nil, &wakes)
			d.ended <- turnEnd{host: c.host, wakes: wakes, rep: rep, err: err}
		}()
	}
	d.ready = append(d.ready[:0], d.ready[n:]...)
}

// release gives back the claims never started (Run is stopping), so that
// another worker may serve them at once rather than after their lease.
func (d *dispatcher) release() {
	d.w.waiting.Add(-int64(len(d.ready)))
	for _, c := range d.ready {
		d.w.perHost.leave(c.host)
		if err := d.w.store.Advance(d.ctx, c.st.Claim(), c.st.NextSeq); err != nil {
			d.w.opts.logger.Debug("herald: could not release an unstarted claim; its lease will expire", "stream", c.st.Stream,
				"registration", c.st.ID, "err", err)
		}
	}
	d.ready = nil
}

// end accounts for a turn that ended: its slot and its host's place are
// free, so a claim may find work (a backlog, or a host now under its cap).
func (d *dispatcher) end(e turnEnd) {
	d.running--
	d.w.perHost.leave(e.host)
	if e.err != nil {
		d.turnErr = true
		d.fail(e.err)
	}
	if d.resting {
		return
	}
	d.ends++
	// A wake that came after the turn last read its stream (an append,
	// say) may be for this registration, whose lease hid it from a claim
	// that began since; a backlog is work left for certain. Either way
	// claim now. (A turn reads again on a wake before it ends: only a wake
	// during its last write is left.) A wake that no claim began after is
	// claimed for anyway (it is in the channel, or due is set), by a claim
	// that begins after this turn released its registration.
	if (e.wakes != d.w.wakes.Load() && d.claimed > e.wakes) || e.rep.Backlog > 0 {
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
