package dispatch

import (
	"container/heap"
	"context"
	"time"

	"github.com/heraldpush/herald/journal"
)

// loop is Run's dispatcher: claims on the wall clock whenever due is set,
// its one trigger.
type loop struct {
	*dispatcher
	due      bool   // a claim now may find work: a wake, the interval, a full claim, a turn end that may have left work
	resends  bool   // the next claim looks for pending resends too: the first, after a wake or the interval, after a full one
	refill   int    // turn ends that make a claim worth its query when only a capped or troubled host may have work
	ends     int    // turns ended since the last claim
	capped   bool   // a host was at its cap after the last claim: turn ends free room for what Due held back
	claimed  uint64 // the worker's Wake count when the last claim began
	resting  bool   // the last claim failed: only the interval or a wake claims again
	failures int    // errors since the loop last worked (logged at the first)
	turnErr  bool   // a turn failed since the last claim
	paced    pacing // when registrations whose rate held records become due
}

// Run is push.Worker.Run: claims on the wall clock, at least every
// interval, until ctx ends.
func (w *Engine) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return journal.Invalid("every", "is %v: it must be positive", every)
	}
	l := &loop{dispatcher: w.newDispatcher(context.WithoutCancel(ctx), ctx.Done()), due: true, resends: true,
		refill: max(1, min(w.cfg.MaxInFlight/4, w.cfg.MaxPerHost/2))}
	l.live = true
	timer := time.NewTimer(every)
	defer timer.Stop()
	defer l.paced.stop()
	defer l.renewing()()
	stop := l.stop
	for {
		if ctx.Err() != nil { // even when the select below took a turn's end first
			stop = nil // claim and start nothing more; wait for the turns in flight
		}
		if stop != nil {
			l.start()
			if l.canClaim() {
				l.claimMore()
				if ctx.Err() == nil { // a stop during the claim: release gives it back
					l.start()
				}
				timer.Reset(every)
			}
		} else {
			l.release()
			if len(l.running) == 0 {
				return nil
			}
		}
		select {
		case <-stop: // the loop's top sees ctx ended
		case e := <-l.ended:
			l.turnEnded(e)
		case <-l.slowed:
			l.demote()
		case <-w.wake:
			l.due, l.resends, l.resting = true, true, false
		case <-timer.C:
			l.due, l.resends, l.resting = true, true, false
			timer.Reset(every)
		case <-l.paced.c():
			l.due = l.paced.fired(time.Now()) || l.due
		}
	}
}

// turnEnded accounts for a turn that ended, and sets due if a claim may now
// find work: a backlog, a wake the turn's lease hid from the claims made
// meanwhile, or, with a host capped or troubled, room that refill ends (or
// an empty worker) made.
func (l *loop) turnEnded(e turnEnd) {
	l.end(e)
	if e.err != nil {
		l.turnErr = true
		l.fail(e.err)
	}
	if !e.paced.IsZero() {
		l.paced.add(e.paced)
	}
	if l.resting {
		return
	}
	l.ends++
	woken := e.wakes != l.w.wakes.Load() && l.claimed > e.wakes
	held := l.capped || l.w.book.Troubled() // a probe's answer releases a troubled host's registrations
	if woken || e.rep.Backlog > 0 || (held && (l.ends >= l.refill || l.fast == 0)) {
		l.due = true
	}
}

// canClaim says whether a claim is due and the loop has room for it: under
// twice MaxInFlight claims, fewer than half of them ready (those that wait
// for the slow budget aside: a host's claims are bounded by its cap).
func (l *loop) canClaim() bool {
	max, ready := l.w.cfg.MaxInFlight, len(l.ready)-l.readySlow
	full := l.fast+ready >= 2*max || (ready >= (max+1)/2 && l.fast > 0)
	return l.due && !full
}

// claimMore takes fresh claims up to what the loop may hold.
func (l *loop) claimMore() {
	w := l.w
	l.claimed = w.wakes.Load()
	limit := min(2*w.cfg.MaxInFlight-l.fast-(len(l.ready)-l.readySlow), w.cfg.SweepLimit)
	batch, resends, err := l.claim(time.Now(), limit, true, l.resends)
	if err != nil {
		l.due, l.resting, l.ends = false, true, 0
		l.fail(err)
		return
	}
	l.resends = resends.More
	if l.failures > 0 && !l.turnErr {
		w.cfg.Logger.Info("herald: claims recovered", "namespace", w.namespace, "errors", l.failures)
		l.failures = 0
	}
	l.turnErr, l.ends = false, 0
	// More may be due only if this claim was full.
	l.due = len(batch.Registrations) > 0 && (batch.More || len(batch.Registrations) >= limit) || resends.More
	_, _, atCap := w.perHost.Load()
	l.capped = atCap > 0
}

func (l *loop) fail(err error) {
	l.failures++
	log := l.w.cfg.Logger
	if l.failures == 1 {
		log.Error("herald: store or journal error; retrying every interval until it recovers", "namespace", l.w.namespace, "err", err)
	} else {
		log.Debug("herald: store or journal error again", "namespace", l.w.namespace, "errors", l.failures, "err", err)
	}
}

// pacing keeps the instants at which registrations whose rate held records
// become due, as turns reported them: a timer claims at the earliest, so a
// 10/s rate is served at its pace, not the interval's. Beyond maxPaced the
// interval claims for them.
type pacing struct {
	at    []time.Time // a min-heap
	timer *time.Timer // armed for at[0]
}

// maxPaced bounds the instants kept: a registration has one at a time.
const maxPaced = 4096

func (p *pacing) add(t time.Time) {
	if len(p.at) >= maxPaced {
		return
	}
	heap.Push(p, t)
	if p.at[0].Equal(t) {
		p.arm()
	}
}

// fired drops the instants passed at now, arms the timer for the next, and
// says whether any passed.
func (p *pacing) fired(now time.Time) bool {
	n := len(p.at)
	for len(p.at) > 0 && !p.at[0].After(now) {
		heap.Pop(p)
	}
	p.arm()
	return len(p.at) < n
}

func (p *pacing) arm() {
	if len(p.at) == 0 {
		return
	}
	d := time.Until(p.at[0])
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
}

// c is the timer's channel; nil (never ready) with no instant kept.
func (p *pacing) c() <-chan time.Time {
	if p.timer == nil || len(p.at) == 0 {
		return nil
	}
	return p.timer.C
}

func (p *pacing) stop() {
	if p.timer != nil {
		p.timer.Stop()
	}
}

// heap.Interface, by instant.
func (p *pacing) Len() int           { return len(p.at) }
func (p *pacing) Less(i, j int) bool { return p.at[i].Before(p.at[j]) }
func (p *pacing) Swap(i, j int)      { p.at[i], p.at[j] = p.at[j], p.at[i] }
func (p *pacing) Push(x any)         { p.at = append(p.at, x.(time.Time)) }
func (p *pacing) Pop() any {
	t := p.at[len(p.at)-1]
	p.at = p.at[:len(p.at)-1]
	return t
}
