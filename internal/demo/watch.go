package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/heraldpush/herald/push"
)

// attempts counts, per registration, the attempts the workers report
// through push.Hooks: messages accepted and attempts that failed.
type attempts struct {
	mu sync.Mutex
	m  map[push.Key]*attemptCount
}

type attemptCount struct{ accepted, failed int }

// add is the workers' Attempt hook.
func (a *attempts) add(at push.Attempt) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.m[at.Registration.Key()]
	if c == nil {
		c = &attemptCount{}
		a.m[at.Registration.Key()] = c
	}
	if at.Outcome.OK() {
		c.accepted++
	} else {
		c.failed++
	}
}

func (a *attempts) of(k push.Key) attemptCount {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.m[k]; c != nil {
		return *c
	}
	return attemptCount{}
}

// statuses reads every registration of the database (the demo's alone: it
// refuses a database that has others). A plan missing from the result has
// completed: its stream's terminal record was acknowledged.
func (s *scenario) statuses(ctx context.Context) (map[push.Key]push.Status, error) {
	out := map[push.Key]push.Status{}
	q := push.ListQuery{Limit: push.MaxListLimit}
	for {
		page, err := s.cfg.Store.List(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("read the registrations: %w", err)
		}
		for _, st := range page {
			out[st.Key()] = st
		}
		if len(page) < q.Limit {
			return out, nil
		}
		q.After = page[len(page)-1].Key()
	}
}

// settled reports whether a registration has nothing left to do until an
// operator acts: completed (absent), parked, or its cursor past the head.
func settled(st push.Status, present bool) bool {
	return !present || st.Parked || st.NextSeq > st.Head
}

// wait polls the registrations of ps until all are settled, writing a
// progress line a second to cfg.Progress. It fails when ctx ends first,
// naming the registrations still at work.
func (s *scenario) wait(ctx context.Context, ps []*plan) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	start, shown := time.Now(), time.Now()
	for {
		sts, err := s.statuses(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
		var pending []string
		delivered, total, retrying, parked := 0, 0, 0, 0
		for _, p := range ps {
			st, ok := sts[p.key()]
			delivered += min(s.attempts.of(p.key()).accepted, len(p.want))
			total += len(p.want)
			switch {
			case ok && st.Parked:
				parked++
			case ok && st.State() == push.StateRetrying:
				retrying++
			}
			if !settled(st, ok) {
				pending = append(pending, fmt.Sprintf("%s (%s at cursor %d of %d%s)", push.Name(p.reg.Stream, p.reg.ID), st.State(), st.NextSeq, st.Head, lastError(st)))
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if s.cfg.polled != nil {
			s.cfg.polled(sts, s.expire)
		}
		if s.cfg.Progress != nil && time.Since(shown) >= time.Second {
			shown = time.Now()
			fmt.Fprintf(s.cfg.Progress, "  %4.1fs  %d/%d messages delivered, %d retrying, %d parked\n",
				time.Since(start).Seconds(), delivered, total, retrying, parked)
		}
		// Out of time is judged on the states just read, before waiting
		// for the next tick: the failure names who was at work then.
		if ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-tick.C:
				continue
			}
		}
		if errors.Is(context.Cause(ctx), errOutOfTime) {
			return fmt.Errorf("the demo did not finish within --duration %v: still at work: %s", s.cfg.Duration, strings.Join(pending, "; "))
		}
		return ctx.Err()
	}
}

func lastError(st push.Status) string {
	if st.LastError == "" {
		return ""
	}
	return ", last error: " + st.LastError
}

// rows reads every plan's registration and its receiver's counts.
func (s *scenario) rows(ctx context.Context) ([]RegistrationSummary, error) {
	sts, err := s.statuses(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]RegistrationSummary, 0, len(s.plans))
	for _, p := range s.plans {
		st, ok := sts[p.key()]
		a := s.attempts.of(p.key())
		c := p.receiver.Counts(p.path)
		row := RegistrationSummary{Stream: p.reg.Stream, ID: p.reg.ID, Receiver: p.receiver.Name, Namespace: p.reg.Namespace,
			Records: p.records, Expected: len(p.want), Delivered: a.accepted, Failed: a.failed, Verifies: p.receiver.Verifies,
			Verified: c.Verified, Duplicates: c.Duplicates, Refused: c.Refused, VerifyFailures: c.Failures}
		if ok {
			row.State, row.NextSeq, row.Head, row.Parked, row.LastError = st.State(), st.NextSeq, st.Head, st.Parked, st.LastError
			evs, err := s.cfg.Store.Evidence(ctx, p.reg.Stream, p.reg.ID, 0)
			if err != nil {
				return nil, err
			}
			for _, ev := range evs {
				if ev.Event == push.EventParked {
					row.TimesParked++
				}
			}
		} else {
			row.State, row.Head = StateCompleted, uint64(p.records)
			if n := len(p.want); n > 0 {
				row.NextSeq = p.want[n-1].Record.Seq + 1
			}
		}
		row.Retried = max(0, row.Failed-row.TimesParked)
		out = append(out, row)
	}
	return out, nil
}
