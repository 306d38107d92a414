package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldpush/herald/store"
)

// burst is how a registration's rate is served: at most size messages a
// turn, the next turn's first starting spacing after this one's last answer.
type burst struct {
	size    int
	spacing time.Duration
}

// burstOf splits r into the most bursts a period that are minSpacing
// (push.MinBurstSpacing) apart or more, of equal size: m, a divisor of
// r.Count, bursts of r.Count/m, r.Per/m apart (rounded up, so that m of
// them span the period). At 250 ms, 10/s is 2 bursts of 5; 20/s 4 of 5;
// 600/min 200 of 3; 7/s one of 7.
func burstOf(r store.Rate, minSpacing time.Duration) burst {
	m := max(min(r.Count, int(r.Per/minSpacing)), 1)
	for r.Count%m != 0 {
		m--
	}
	return burst{size: r.Count / m, spacing: (r.Per + time.Duration(m) - 1) / time.Duration(m)}
}

// pace is a turn's share of its registration's rate: one burst. Only the
// turn's goroutine touches it.
type pace struct {
	burst
	left    int  // messages the burst may still start
	sent    int  // messages started, charged at the turn's end
	refused bool // a record did not fit in what was left
}

// newPace returns the turn's burst, or the instant it must wait for
// instead: the registration's pace, or, when the claim took a lapsed lease,
// a spacing past the claim (the lapsed turn's burst, which no write
// recorded, ended by then). A registration without a rate has neither.
func (t *turn) newPace() (*pace, time.Time) {
	if t.reg.Rate.IsZero() {
		return nil, time.Time{}
	}
	b := burstOf(t.reg.Rate, t.w.cfg.MinBurstSpacing)
	next := t.reg.PacedUntil
	if lapsed := microsUp(t.at.Add(b.spacing)); t.lapsed && next.Before(lapsed) {
		next = lapsed
	}
	if t.at.Before(next) {
		return nil, next
	}
	return &pace{burst: b, left: b.size}, time.Time{}
}

// take says whether a record of n messages may start now, and counts them.
// A record of more messages than a burst never fits: oversize.
func (p *pace) take(n int) (ok, oversize bool) {
	switch {
	case p == nil || n == 0:
		return true, false
	case n > p.size:
		return false, true
	case n > p.left:
		p.refused = true
		return false, false
	}
	p.left -= n
	p.sent += n
	return true, false
}

// spent says whether the burst is used up: the turn sends no more.
func (p *pace) spent() bool { return p != nil && (p.left == 0 || p.refused) }

// oversize is the failure of a record the rate can never send.
func (p *pace) oversize(seq uint64, n int, r store.Rate) string {
	return fmt.Sprintf("record #%d has %d messages, more than the burst of %d that rate %s sends at once: raise the rate, or skip the record",
		seq, n, p.size, r)
}

// endBurst records the burst the turn sent (Store.Pace) before the write
// that ends the turn, and returns the instant the next may start: a spacing
// after now on the turn's clock (its instant under RunOnce, the wall clock
// under Run, when the last answer came), rounded up to a microsecond. Zero
// when the turn sent nothing under a rate.
func (t *turn) endBurst(ctx context.Context) (time.Time, error) {
	if t.pace == nil || t.pace.sent == 0 {
		return time.Time{}, nil
	}
	until := microsUp(t.now().Add(t.pace.spacing))
	t.pace.sent = 0 // recorded once
	if err := t.w.store.Pace(ctx, t.claim, until); err != nil {
		return time.Time{}, fmt.Errorf("record the rate's burst at #%d: %w", t.next, err)
	}
	return until, nil
}

// microsUp rounds t up to a whole microsecond, which PostgreSQL keeps, so
// that no store moves a pace earlier.
func microsUp(t time.Time) time.Time {
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		return r.Add(time.Microsecond)
	}
	return t
}

// now is the turn's clock: its instant under RunOnce, which reads no wall
// clock; the wall clock under Run, whose instants are the wall clock's.
func (t *turn) now() time.Time {
	if t.live {
		return time.Now()
	}
	return t.at
}

// deferred ends a turn that the rate lets send nothing before next: no
// attempt, no evidence, due again at next.
func (t *turn) deferred(ctx context.Context, next time.Time) error {
	ctx = context.WithoutCancel(ctx)
	if err := t.w.store.Pace(ctx, t.claim, next); err != nil {
		return t.lost(err, fmt.Errorf("defer to the rate's next burst at %v: %w", next, err))
	}
	if err := t.save(ctx, nil); err != nil {
		return err
	}
	t.rep.Paced++
	t.paced = next
	return nil
}
