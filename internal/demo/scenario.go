package demo

import (
	"cmp"
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// The demo's delivery policy: the down receiver is parked within seconds,
// not the hour and more of the defaults.
const (
	maxAttempts = 3                      // push.WithMaxAttempts
	retryDelay  = time.Second            // push.WithSchedule's one step, unless a Retry-After asks longer
	sweepEvery  = 200 * time.Millisecond // push.Worker.Run's interval
	pollEvery   = 100 * time.Millisecond // how often the demo reads the registrations
	// DefaultDuration bounds a run.
	DefaultDuration = 50 * time.Second
)

// Config is what Run needs.
type Config struct {
	Journal   journal.Journal // with Store, one empty database
	Store     store.Store
	Transport push.Transport // one that allows http:// and loopback
	Input     *Input
	Database  string        // how the narration names the database
	Duration  time.Duration // bound on the whole run; 0 means DefaultDuration
	Out       io.Writer     // the narration and the tables (nil: none)
	Progress  io.Writer     // a progress line a second while delivering (nil: none)
	Logger    *slog.Logger  // the workers' logs (nil: none)
	// ShowRegistrations prints registrations as `herald registrations` does.
	ShowRegistrations func(w io.Writer, sts []store.Status) error

	// polled, if set, sees the registrations each time the demo reads them
	// while it waits; expire ends the run's Duration there and then.
	polled func(rows []RegistrationSummary, expire func())
}

// ErrNotEmpty is what Run's error wraps when the database holds
// registrations or the input's streams: nothing was changed.
var ErrNotEmpty = errors.New("the demo needs an empty database")

// errOutOfTime is the cause of the run's context ending at Config.Duration.
var errOutOfTime = errors.New("demo: out of time")

// expected is one message the journal says a receiver should get: the
// record, and what the projection made of it.
type expected struct {
	Record  journal.Record
	Message push.Message
}

// plan is one registration of the demo: the receiver it delivers to, what
// the journal says that receiver should get (want, in order), and its row
// of the summary, whose counts both sides keep under the receiver's mu.
type plan struct {
	RegistrationSummary
	reg      push.Registration
	receiver *receiver
	want     []expected
	reasons  []string // the first distinct reasons of its VerifyFailures, at most maxReasons
}

type scenario struct {
	cfg     Config
	out     io.Writer
	started time.Time
	rs      []*receiver
	up      atomic.Bool // the down receiver is back
	plans   []*plan
	workers map[string]*push.Worker // by namespace
	sum     *Summary
	expire  func() // ends the run's Duration now (errOutOfTime)
}

// Run runs the demo and returns its Summary, or an error when it could not
// run: the database is not empty (ErrNotEmpty), an append or a
// registration failed, or ctx ended. It stops within cfg.Duration.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	cfg.Duration = cmp.Or(cfg.Duration, DefaultDuration)
	s := &scenario{cfg: cfg, out: cmp.Or[io.Writer](cfg.Out, io.Discard), started: time.Now(),
		sum: &Summary{Input: cfg.Input.Name, Database: cfg.Database, Failures: []string{}}}
	deadline, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.expire = func() { cancel(errOutOfTime) }
	defer time.AfterFunc(cfg.Duration, s.expire).Stop()
	defer func() {
		for _, r := range s.rs {
			if r.srv != nil { // setup stops starting them at the first that cannot listen
				r.srv.Close()
			}
		}
	}()
	if err := s.setup(deadline); err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(deadline), errOutOfTime) {
			return nil, fmt.Errorf("the demo did not finish within --duration %v: it was still setting up: %w", cfg.Duration, err)
		}
		return nil, err
	}

	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range s.workers {
		wg.Go(func() { _ = w.Run(wctx, sweepEvery) })
	}
	err := s.deliver(deadline)
	if err == nil {
		err = s.recover(deadline)
	}
	stop()
	wg.Wait() // every cursor is saved
	if ctx.Err() != nil {
		return nil, fmt.Errorf("demo interrupted: %w", ctx.Err())
	}
	if err != nil {
		s.sum.Failures = append(s.sum.Failures, err.Error())
	}
	return s.sum, s.finish(ctx)
}

// setup checks the database is empty, starts the receivers, appends the
// input and registers each stream for the receivers of its wire.
func (s *scenario) setup(ctx context.Context) error {
	cfg, in := s.cfg, s.cfg.Input
	if err := s.checkEmpty(ctx); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "herald demo: %s, delivered from %s.\n", in.Name, cfg.Database)
	t := time.Now()
	creds, err := newCredentials()
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "Generated the actors' %d-bit RSA signing key in %v.\n", keyBits, time.Since(t).Round(time.Millisecond))
	keys := map[string]crypto.PublicKey{}
	for _, a := range in.Actors {
		keys[a.Actor+"#main-key"] = &creds.key.PublicKey
	}
	if s.rs, err = newReceivers(ctx, creds, keys, &s.up); err != nil {
		return err
	}
	fmt.Fprintln(s.out, "\nReceivers, each a real HTTP server on loopback:")
	for _, r := range s.rs {
		if err := r.start(); err != nil {
			return err
		}
		fmt.Fprintf(s.out, "  %-11s  %-11s  %-22s  %s\n", r.name, r.proj.Namespace(), r.url, r.about)
	}

	for _, st := range in.all() {
		for batch := range slices.Chunk(st.Entries, journal.MaxBatch) {
			if _, err := cfg.Journal.Append(ctx, st.Name, batch...); err != nil {
				return fmt.Errorf("append to %s: %w", st.Name, err)
			}
		}
		s.sum.Records += len(st.Entries)
	}
	s.sum.Streams = len(in.all())

	s.workers = map[string]*push.Worker{}
	for _, st := range in.all() {
		for _, r := range s.rs {
			if strings.HasPrefix(st.Name, r.takes) {
				if err := s.register(ctx, st, r); err != nil {
					return err
				}
			}
		}
	}
	fmt.Fprintf(s.out, "\nAppended %d records to %d streams (%s, %s, %s) and made %d registrations.\n",
		s.sum.Records, s.sum.Streams, plural(len(in.Actors), "actor stream"), plural(len(in.Webhooks), "webhook stream"),
		plural(len(in.Tasks), "A2A task stream"), len(s.plans))
	fmt.Fprintf(s.out, "Workers: one per namespace, each a dispatcher claiming every %v; at most %d attempts per record, %v apart unless the receiver's Retry-After says otherwise.\n",
		sweepEvery, maxAttempts, retryDelay)
	return nil
}

// register registers st for r, with the worker of its namespace, and tells
// r what it should receive: what r's projection makes of the records the
// journal holds, in order, up to the one that ends the registration.
func (s *scenario) register(ctx context.Context, st Stream, r *receiver) error {
	raw, err := json.Marshal(r.config(st))
	if err != nil {
		return fmt.Errorf("encode the %s config of %s: %w", r.name, st.Name, err)
	}
	ns := r.proj.Namespace()
	if s.workers[ns] == nil {
		opts := []push.Option{push.WithMaxAttempts(maxAttempts), push.WithSchedule(push.Schedule{retryDelay}),
			push.WithLogger(cmp.Or(s.cfg.Logger, slog.New(slog.DiscardHandler))), push.WithHooks(push.Hooks{Attempt: s.attempt})}
		if s.workers[ns], err = push.NewWorker(s.cfg.Journal, s.cfg.Store, s.cfg.Transport, r.proj, opts...); err != nil {
			return err
		}
	}
	p := &plan{receiver: r, reg: push.Registration{Stream: st.Name, ID: r.name, Namespace: ns,
		URL: r.url + (&url.URL{Path: "/" + st.Name}).EscapedPath(), Config: raw},
		RegistrationSummary: RegistrationSummary{Stream: st.Name, ID: r.name, Receiver: r.name, Namespace: ns, Records: len(st.Entries), Verifies: r.verifies}}
	if _, err := s.workers[ns].Register(ctx, p.reg); err != nil {
		return fmt.Errorf("register %s: %w", store.Name(st.Name, r.name), err)
	}
	recs, err := s.cfg.Journal.Read(ctx, st.Name, 1, len(st.Entries), 0)
	if err != nil {
		return fmt.Errorf("read %s: %w", st.Name, err)
	}
	for _, rec := range recs {
		msgs, err := r.proj.Messages(ctx, rec, p.reg)
		if err != nil {
			return fmt.Errorf("project %s#%d for %s: %w", rec.Stream, rec.Seq, r.name, err)
		}
		for _, m := range msgs {
			p.want = append(p.want, expected{Record: rec, Message: m})
		}
		if r.proj.Terminal(rec) {
			break
		}
	}
	s.plans = append(s.plans, p)
	r.expect("/"+st.Name, p)
	return nil
}

// checkEmpty refuses a database that holds registrations or the input's
// streams: the demo's workers would deliver the registrations too, and its
// appends would conflict.
func (s *scenario) checkEmpty(ctx context.Context) error {
	regs, err := s.cfg.Store.List(ctx, store.ListQuery{Limit: 1})
	if err != nil {
		return fmt.Errorf("read the database's registrations: %w", err)
	}
	if len(regs) > 0 {
		return fmt.Errorf("%s already has registrations (%s, …): %w, since its workers would deliver them too; omit --database to use a fresh one",
			s.cfg.Database, store.Name(regs[0].Stream, regs[0].ID), ErrNotEmpty)
	}
	for _, st := range s.cfg.Input.all() {
		if head, err := s.cfg.Journal.Head(ctx, st.Name); err != nil {
			return fmt.Errorf("read the head of %s: %w", st.Name, err)
		} else if head > 0 {
			return fmt.Errorf("%s already holds the stream %s (from an earlier demo?): %w; omit --database to use a fresh one", s.cfg.Database, table.Clean(st.Name), ErrNotEmpty)
		}
	}
	return nil
}

func (s *scenario) attempt(at push.Attempt) {
	for _, p := range s.plans {
		if p.reg.Key() == at.Registration.Key() {
			p.receiver.mu.Lock()
			if at.Outcome.OK() {
				p.Delivered++
			} else {
				p.Failed++
			}
			p.receiver.mu.Unlock()
		}
	}
}

// deliver waits until every registration has delivered everything or is
// parked, then shows the registrations and the parked ones.
func (s *scenario) deliver(ctx context.Context) error {
	fmt.Fprintln(s.out, "\nDelivering…")
	t := time.Now()
	if err := s.wait(ctx, s.plans); err != nil {
		return err
	}
	s.sum.DeliverSeconds = time.Since(t).Seconds()
	fmt.Fprintf(s.out, "Every registration delivered everything or was parked, in %.1fs.\n\n", s.sum.DeliverSeconds)
	rows, err := s.rows(ctx, s.plans, true)
	if err != nil {
		return err
	}
	t2 := table.New(s.out, "STREAM", "RECEIVER", "NAMESPACE", "RECORDS", "EXPECTED", "DELIVERED", "RETRIED", "STATE", "CURSOR", "VERIFIED")
	for _, r := range rows {
		verified := "-"
		if r.Verifies {
			verified = fmt.Sprintf("%d/%d", r.Verified, r.Expected)
		}
		if r.VerifyFailures > 0 {
			verified += fmt.Sprintf(" (%d FAILED)", r.VerifyFailures)
		}
		t2.Row(r.Stream, r.Receiver, r.Namespace, fmt.Sprint(r.Records), fmt.Sprint(r.Expected), fmt.Sprint(r.Delivered),
			fmt.Sprint(r.Retried), r.State, fmt.Sprint(r.NextSeq), verified)
	}
	if err := t2.Flush(); err != nil {
		return err
	}
	fmt.Fprint(s.out, `EXPECTED: what the journal says the receiver should get, the projection of the
stream's records (an inbox gets no Block of its actor and nothing addressed
only to others; an A2A registration ends at its task's terminal state).
VERIFIED: what the receiver itself verified, in order, of what it expected.
`)
	parked, err := s.cfg.Store.List(ctx, store.ListQuery{Parked: true, Limit: store.MaxListLimit})
	if err != nil {
		return err
	}
	fmt.Fprintln(s.out, "\n$ herald registrations --parked")
	return s.cfg.ShowRegistrations(s.out, parked)
}

// recover brings the down receiver back, unparks its registrations and
// waits until they caught up.
func (s *scenario) recover(ctx context.Context) error {
	s.up.Store(true)
	fmt.Fprintf(s.out, "\nThe %s receiver is back up.\n", downName)
	var downs []*plan
	for _, p := range s.plans {
		if p.Receiver != downName {
			continue
		}
		downs = append(downs, p)
		st, err := s.cfg.Store.Get(ctx, p.reg.Stream, p.reg.ID) // Unpark resumes it at this cursor
		if err == nil {
			err = s.cfg.Store.Unpark(ctx, p.reg.Stream, p.reg.ID, time.Now())
		}
		if err != nil {
			return err
		}
		s.sum.Recovered = append(s.sum.Recovered, Recovery{Stream: p.reg.Stream, ID: p.reg.ID, WasParked: st.Parked, FromSeq: st.NextSeq})
		fmt.Fprintf(s.out, "$ herald unpark --stream %s --id %s\n", p.reg.Stream, p.reg.ID)
		if st.Parked {
			fmt.Fprintf(s.out, "Unparked %s: due now at cursor %d (%d records to deliver).\n", store.Name(p.reg.Stream, p.reg.ID), st.NextSeq, st.Lag())
		} else {
			fmt.Fprintf(s.out, "%s was not parked; nothing changed.\n", store.Name(p.reg.Stream, p.reg.ID))
		}
	}
	for _, p := range downs {
		s.workers[p.reg.Namespace].Wake()
	}
	t := time.Now()
	if err := s.wait(ctx, downs); err != nil {
		return err
	}
	s.sum.RecoverSeconds = time.Since(t).Seconds()
	return nil
}

// wait reads the registrations of ps until each completed, is idle or
// parked, writing a progress line a second to cfg.Progress. It fails when
// ctx ends first, naming the registrations still at work.
func (s *scenario) wait(ctx context.Context, ps []*plan) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	start, shown := time.Now(), time.Now()
	for {
		rows, err := s.rows(context.WithoutCancel(ctx), ps, false)
		if err != nil {
			return err
		}
		var pending []string
		delivered, total, states := 0, 0, map[string]int{}
		for _, r := range rows {
			delivered, total = delivered+min(r.Delivered, r.Expected), total+r.Expected
			states[r.State]++
			if r.State == store.StateReady || r.State == store.StateRetrying {
				last := ""
				if r.LastError != "" {
					last = ", last error: " + r.LastError
				}
				pending = append(pending, fmt.Sprintf("%s (%s at cursor %d of %d%s)", store.Name(r.Stream, r.ID), r.State, r.NextSeq, r.Head, last))
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if s.cfg.polled != nil {
			s.cfg.polled(rows, s.expire)
		}
		if s.cfg.Progress != nil && time.Since(shown) >= time.Second {
			shown = time.Now()
			fmt.Fprintf(s.cfg.Progress, "  %4.1fs  %d/%d messages delivered, %d retrying, %d parked\n",
				time.Since(start).Seconds(), delivered, total, states[store.StateRetrying], states[store.StateParked])
		}
		if ctx.Err() == nil { // else the failure names who was at work at the last read
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

// plural writes n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
