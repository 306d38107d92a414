package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push/internal/hosts"
	"github.com/heraldpush/herald/push/internal/pages"
	"github.com/heraldpush/herald/push/wire"
	"github.com/heraldpush/herald/store"
)

// turn serves one claimed registration (package doc, "Turns"), a page at a
// time through its window (window.go). A turn that reached its stream's end
// across a Wake reads once more (woken), never past a drain page from the
// cursor's last write: invariant 2's bound stays one page.
type turn struct {
	w        *Engine
	at       time.Time
	stop     <-chan struct{}
	deadline time.Time // real time after which no record is started (half the lease after the turn began)
	reg      store.Registration
	head     uint64       // the stream's head when claimed, raised by the pages read
	claim    store.Claim  // fences the turn's writes
	slot     *slot        // the dispatcher's: a send that goes slow tells it
	host     *hosts.Entry // the host's tokens, one held around each send
	hostName string       // reg.Host(), computed once at the claim
	rep      wire.SweepReport

	wakes   *uint64 // the worker's Wake count the turn last read at
	unsaved int     // records acknowledged since the cursor's last write

	live   bool      // under Run: the turn's clock is the wall clock (now)
	lapsed bool      // the claim took a lapsed lease (store.Status.Lapsed)
	pace   *pace     // the registration's rate's burst, nil without a rate
	paced  time.Time // the rate holds the records left until then (Run claims again at it)

	next     uint64 // first seq not yet acknowledged in this turn
	attempts int    // failures before the next one (0 once the cursor moved)
}

func (t *turn) run(ctx context.Context) error {
	w := t.w
	t.next, t.attempts = t.reg.NextSeq, t.reg.Attempts
	if t.stopping() {
		return nil // the lease expires; nothing was tried
	}
	if errors.Is(context.Cause(ctx), errLeaseTaken) {
		t.rep.LeasesLost++ // taken before the turn started (leases.renew): nothing was tried
		return nil
	}
	var next time.Time
	if t.pace, next = t.newPace(); !next.IsZero() {
		return t.deferred(ctx, next)
	}
	first := w.cfg.DrainPage
	if t.pace != nil {
		first = min(first, t.pace.size) // a burst's worth: what is past it waits for the next
	}
	recs, err := t.read(ctx, first)
	if err != nil {
		return err
	}
	for {
		p := newPipe(t, recs)
		p.run(ctx)
		if p.lo > 0 {
			t.next, t.attempts = recs[0].Seq+uint64(p.lo), 0
			t.unsaved += p.lo
			if t.reg.Attempts > 0 || t.reg.HostFailures > 0 {
				w.failing.forget(t.reg.Key()) // its run of failures ended
			}
		}
		if f, ok := p.fails[p.lo]; ok && p.lo < len(recs) {
			return t.fail(ctx, f.out, f.ev) // the first unacknowledged record's failure decides
		}
		if p.err != nil && ctx.Err() != nil {
			// In flight was abandoned (a cancel, the lease's end): uncharged.
			switch cause := context.Cause(ctx); {
			case errors.Is(cause, errLeaseEnding):
				w.cfg.Logger.Warn("herald: the claim's lease is ending; deliveries in flight were abandoned and will be sent again",
					"stream", t.reg.Stream, "registration", t.reg.ID, "cursor", t.next)
			case errors.Is(cause, errLeaseTaken):
				w.cfg.Logger.Info("herald: the claim's lease was taken (an operator's change, or another worker); deliveries in flight were abandoned",
					"stream", t.reg.Stream, "registration", t.reg.ID, "cursor", t.next)
			}
			return t.save(ctx, nil)
		}
		if p.err != nil {
			return t.save(ctx, p.err)
		}
		if p.terminal {
			if err := w.store.Complete(context.WithoutCancel(ctx), t.claim); err != nil {
				return t.lost(err, fmt.Errorf("complete after final record #%d: %w", t.next-1, err))
			}
			t.rep.Completed++
			w.cfg.Logger.Info("herald: registration completed", "stream", t.reg.Stream, "registration", t.reg.ID, "final_seq", t.next-1)
			return nil
		}
		if p.lo < len(recs) || !t.goOn() {
			break // stopped within the page, or the slot is wanted
		}
		if t.unsaved < w.cfg.DrainPage { // short of a drain page: the stream's end, the byte bound, or a burst's page of kinds not wanted
			end := t.next > t.head
			if limit := w.cfg.DrainPage - t.unsaved; !end || t.woken() {
				if end { // no page read before now stands for this read (internal/pages)
					ctx = pages.WithClaim(ctx, time.Now(), t.head)
				}
				if recs, err = t.read(ctx, limit); err != nil {
					return t.save(ctx, err)
				}
				if len(recs) == 0 {
					break
				}
				continue // the cursor is written once a drain page
			}
			if end {
				break
			}
		}
		var ended bool
		if recs, ended, err = t.nextPage(ctx); ended {
			return err
		}
		if len(recs) == 0 {
			break // the stream ended at the page's end
		}
	}
	if err := t.save(ctx, nil); err != nil {
		return err
	}
	switch {
	case t.next > t.head || t.stopping():
	case !t.paced.IsZero():
		t.rep.Paced++ // more to send at the rate's next burst: Run claims again then
	default:
		t.rep.Backlog++ // more to send: Run claims again at once
	}
	return nil
}

// nextPage checkpoints the cursor while it reads the next page. ended: the
// turn must end at once, returning err.
func (t *turn) nextPage(ctx context.Context) (recs []journal.Record, ended bool, err error) {
	saved := make(chan error, 1)
	go func() { saved <- t.w.store.Checkpoint(context.WithoutCancel(ctx), t.claim, t.next) }()
	recs, err = t.read(ctx, t.w.cfg.DrainPage)
	if serr := <-saved; serr != nil {
		return nil, true, t.lost(serr, fmt.Errorf("checkpoint at #%d: %w", t.next, serr))
	}
	t.unsaved = 0
	if err != nil {
		return nil, true, t.save(ctx, err)
	}
	return recs, false, nil
}

// woken says, once per Wake, whether one came since the turn's claim or its
// last read: a record may have been numbered past what it read.
func (t *turn) woken() bool {
	n := t.w.wakes.Load()
	if n == *t.wakes {
		return false
	}
	*t.wakes = n
	return true
}

// read reads up to limit records and PageBytes from the cursor.
func (t *turn) read(ctx context.Context, limit int) ([]journal.Record, error) {
	recs, err := t.w.journal.Read(ctx, t.reg.Stream, t.next, limit, t.w.cfg.PageBytes)
	if err != nil {
		return nil, fmt.Errorf("read journal from #%d: %w", t.next, err)
	}
	if n := len(recs); n > 0 {
		t.head = max(t.head, recs[n-1].Seq)
	}
	return recs, nil
}

// goOn says whether the turn may go on to its next page: budget left, the
// rate's burst too, not stopping, and no claim waiting for its slot or its
// host's.
func (t *turn) goOn() bool {
	return !t.late() && !t.pace.spent() && !t.stopping() && !t.wanted()
}

// wanted says whether a claim waits for the turn's slot (of its budget,
// regular or slow) or its host's.
func (t *turn) wanted() bool {
	i := 0
	if t.slot.inSlow.Load() {
		i = 1
	}
	return t.w.waiting[i].Load() > 0 || t.host.Queued.Load() > 0
}

// yields says whether the turn gives its slot up before its next record: it
// went slow with no room in the slow budget, and a claim waits for the slot.
func (t *turn) yields() bool { return t.slot.yield.Load() && t.wanted() }

// fail records a failed attempt at t.next with the progress made before it:
// park (permanent, or the ceiling reached) or retry later.
func (t *turn) fail(ctx context.Context, out wire.Outcome, ev store.Evidence) error {
	w := t.w
	ctx = context.WithoutCancel(ctx) // the failure must be recorded even when stopping
	ev.At = t.now()                  // when the answer came under Run, so that a retry's delay counts from it
	paced, err := t.endBurst(ctx)    // a failed request was still a request
	if err != nil {
		return t.lost(err, err)
	}
	if out.HostLevel {
		return t.hostFailed(ctx, ev, paced)
	}
	ev.Attempt = t.attempts + 1
	policy := t.reg.Retry.Or(w.cfg.Retry)
	since := t.reg.FailingSince // the run's first failure, as the store keeps it
	if t.attempts == 0 || since.IsZero() {
		since = ev.At
	}
	ceiling, exhausted := policy.Exhausted(ev.Attempt, since, ev.At)
	if out.Verdict == wire.Permanent || exhausted {
		ev.Event = store.EventParked
		if out.Verdict != wire.Permanent {
			ev.Error = fmt.Sprintf("%s (%s)", ev.Error, ceiling)
		}
		if err := w.store.Park(ctx, t.claim, t.next, ev); err != nil {
			return t.lost(err, fmt.Errorf("park at #%d: %w", t.next, err))
		}
		t.rep.Parked++
		w.cfg.Logger.Warn("herald: registration parked; `herald unpark` resumes it at its cursor",
			"stream", t.reg.Stream, "registration", t.reg.ID, "namespace", t.reg.Namespace,
			"host", t.hostName, "cursor", t.next, "attempt", ev.Attempt, "status", out.Status, "reason", ev.Error)
		return nil
	}
	delay := t.delay(out, policy)
	ev.Event, ev.NotBefore = store.EventFailed, ev.At.Add(delay)
	if paced.After(ev.NotBefore) {
		ev.NotBefore = paced // a retry is one more request
	}
	if err := w.store.Retry(ctx, t.claim, t.next, ev.NotBefore, ev); err != nil {
		return t.lost(err, fmt.Errorf("schedule retry at #%d: %w", t.next, err))
	}
	t.rep.Retries++
	log := w.cfg.Logger.Debug
	if w.failing.due(t.reg.Key(), ev.At) {
		log = w.cfg.Logger.Warn
	}
	log("herald: delivery failing; will retry", "stream", t.reg.Stream, "registration", t.reg.ID,
		"host", t.hostName, "seq", t.next, "attempt", ev.Attempt, "status", out.Status,
		"next_attempt_at", ev.NotBefore, "retry_in", delay, "reason", ev.Error)
	return nil
}

// delay is the wait before the next attempt: the receiver's Retry-After
// clamped to [1 s, MaxRetryAfter], else the policy's.
func (t *turn) delay(out wire.Outcome, p store.RetryPolicy) time.Duration {
	if out.HasRetryAfter {
		return min(max(out.RetryAfter, time.Second), t.w.cfg.MaxRetryAfter)
	}
	return p.Delay(t.reg.Stream, t.reg.ID, t.attempts)
}

// save writes the turn's progress with Advance, releasing the lease, and
// returns cause joined with the store's error.
func (t *turn) save(ctx context.Context, cause error) error {
	ctx = context.WithoutCancel(ctx)
	paced, err := t.endBurst(ctx)
	if err != nil {
		return errors.Join(cause, t.lost(err, err))
	}
	if err := t.w.store.Advance(ctx, t.claim, t.next); err != nil {
		return errors.Join(cause, t.lost(err, fmt.Errorf("advance to #%d: %w", t.next, err)))
	}
	t.paced = paced
	return cause
}

// lost ends the turn quietly when a fenced write was refused (lease lost,
// registration gone); other errors are returned as wrapped.
func (t *turn) lost(err, wrapped error) error {
	if !errors.Is(err, store.ErrLeaseLost) && !errors.Is(err, journal.ErrNotFound) {
		return wrapped
	}
	t.rep.LeasesLost++
	t.w.cfg.Logger.Debug("herald: lease lost; the turn's writes were fenced out", "stream", t.reg.Stream,
		"registration", t.reg.ID, "owner", t.claim.Owner, "claimed_at", t.at, "err", err)
	return nil
}

// errLeaseEnding ends a turn's context at nine tenths of its lease (serve),
// errLeaseTaken when a renewal found its lease taken (leases.renew).
var (
	errLeaseEnding = errors.New("the claim's lease is ending")
	errLeaseTaken  = errors.New("the claim's lease was taken")
)

// late reports whether the turn's budget is spent.
func (t *turn) late() bool { return t.w.cfg.Now().After(t.deadline) }

func (t *turn) stopping() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}
