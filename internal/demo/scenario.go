package demo

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
)

// The demo's delivery policy: a low retry ceiling and short delays, so that
// a receiver that is down is parked within seconds, not the hour and more
// of the defaults.
const (
	// MaxAttempts is the demo's retry ceiling (push.WithMaxAttempts).
	MaxAttempts = 3
	// RetryDelay is the demo's only backoff step (push.WithSchedule), unless
	// a receiver's Retry-After asks for longer.
	RetryDelay = time.Second
	// SweepEvery is the workers' interval (push.Worker.Run).
	SweepEvery = 200 * time.Millisecond
	// DefaultDuration bounds a run.
	DefaultDuration = 50 * time.Second
	// pollEvery is how often the demo reads the registrations' states.
	pollEvery = 100 * time.Millisecond
)

// Config is what Run needs: the database (journal and store, empty), the
// transport, the input, and where to write.
type Config struct {
	Journal   journal.Journal
	Store     push.Store
	Transport push.Transport // an HTTP transport that allows http:// and loopback
	Input     *Input
	Database  string        // how to name the database in the narration
	Duration  time.Duration // bound on the whole run; 0 means DefaultDuration
	// Out receives the narration and the tables (io.Discard for --json).
	Out io.Writer
	// Progress, if set, receives a progress line a second while delivering.
	Progress io.Writer
	// ShowRegistrations prints registrations as `herald registrations`
	// does; the demo shows the parked ones with it.
	ShowRegistrations func(w io.Writer, sts []push.Status) error
	// Logger receives the workers' logs (nil: none).
	Logger *slog.Logger

	// polled, if set, sees the registrations each time the demo reads
	// them while it waits; calling expire ends the run's Duration then
	// and there, as its timer would. Tests use it to run out of time at a
	// state they choose instead of at a wall-clock instant.
	polled func(sts map[push.Key]push.Status, expire func())
}

// errOutOfTime is the cause of the run's context ending at Config.Duration.
var errOutOfTime = errors.New("demo: out of time")

func (c *Config) check() error {
	switch {
	case c.Journal == nil || c.Store == nil || c.Transport == nil || c.Input == nil:
		return errors.New("demo: journal, store, transport and input are required")
	case c.Duration < 0:
		return fmt.Errorf("demo: duration %v is negative", c.Duration)
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.ShowRegistrations == nil {
		c.ShowRegistrations = func(io.Writer, []push.Status) error { return nil }
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// scenario is one run of the demo.
type scenario struct {
	cfg      Config
	started  time.Time
	out      io.Writer
	rs       *receivers
	plans    []*plan
	workers  map[string]*push.Worker
	attempts attempts
	sum      *Summary
	expire   func() // ends the run's Duration now (errOutOfTime)
}

// Run runs the demo: it appends the input, starts the receivers, registers
// them, runs a worker per namespace until every registration has delivered
// everything or is parked, shows the registrations and the parked ones,
// brings the down receiver back, unparks it and waits for it to catch up.
//
// The returned Summary says whether the demo passed (Summary.OK) and, if
// not, what failed. Run returns an error instead when it could not run: the
// database is not empty, a receiver could not start, an append or a
// registration failed, or ctx ended. It stops within cfg.Duration.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &scenario{cfg: cfg, started: time.Now(), out: cfg.Out, attempts: attempts{m: map[push.Key]*attemptCount{}}}
	s.sum = &Summary{Input: cfg.Input.Name, Database: cfg.Database, Failures: []string{}}
	deadline, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.expire = func() { cancel(errOutOfTime) }
	defer time.AfterFunc(cfg.Duration, s.expire).Stop()
	if err := s.setup(deadline); err != nil {
		if s.rs != nil {
			_ = s.rs.close()
		}
		if ctx.Err() == nil && errors.Is(context.Cause(deadline), errOutOfTime) {
			return nil, fmt.Errorf("the demo did not finish within --duration %v: it was still setting up: %w", cfg.Duration, err)
		}
		return nil, err
	}
	defer s.rs.close()

	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range s.workers {
		wg.Go(func() { _ = w.Run(wctx, SweepEvery) })
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
	if err := s.finish(ctx); err != nil {
		return nil, err
	}
	return s.sum, nil
}

// setup checks the database is empty, generates the credentials, starts
// the receivers, appends the input, registers the receivers and computes
// what each should receive.
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
	if s.rs, err = startReceivers(ctx, creds, keys, sourceOf); err != nil {
		return err
	}
	printReceivers(s.out, s.rs.all())

	for _, st := range in.all() {
		for i := 0; i < len(st.Entries); i += journal.MaxBatch {
			if _, err := cfg.Journal.Append(ctx, st.Name, st.Entries[i:min(i+journal.MaxBatch, len(st.Entries))]...); err != nil {
				return fmt.Errorf("append to %s: %w", st.Name, err)
			}
		}
	}
	s.sum.Records, s.sum.Streams = in.Records(), len(in.all())

	hooks := push.WithHooks(push.Hooks{Attempt: s.attempts.add})
	opts := []push.Option{push.WithMaxAttempts(MaxAttempts), push.WithSchedule(push.Schedule{RetryDelay}),
		push.WithLogger(cfg.Logger), hooks}
	s.workers = map[string]*push.Worker{}
	for _, p := range []push.Projection{activitypub.New(), cloudevents.New(), a2a.New(), webhook.New()} {
		w, err := push.NewWorker(cfg.Journal, cfg.Store, cfg.Transport, p, opts...)
		if err != nil {
			return err
		}
		s.workers[p.Namespace()] = w
	}
	if s.plans, err = plans(in, s.rs, creds); err != nil {
		return err
	}
	projections := map[string]push.Projection{activitypub.Namespace: activitypub.New(), cloudevents.Namespace: cloudevents.New(),
		a2a.Namespace: a2a.New(), webhook.Namespace: webhook.New()}
	for _, p := range s.plans {
		if _, err := s.workers[p.reg.Namespace].Register(ctx, p.reg); err != nil {
			return fmt.Errorf("register %s: %w", push.Name(p.reg.Stream, p.reg.ID), err)
		}
		if err := p.expect(ctx, cfg.Journal, projections[p.reg.Namespace]); err != nil {
			return err
		}
		p.receiver.ledger.expect(p.path, p.want)
	}
	fmt.Fprintf(s.out, "\nAppended %d records to %d streams (%s, %s, %s) and made %d registrations.\n",
		s.sum.Records, s.sum.Streams, plural(len(in.Actors), "actor stream"), plural(len(in.Webhooks), "webhook stream"),
		plural(len(in.Tasks), "A2A task stream"), len(s.plans))
	fmt.Fprintf(s.out, "Workers: one per namespace, each a dispatcher claiming every %v; at most %d attempts per record, %v apart unless the receiver's Retry-After says otherwise.\n",
		SweepEvery, MaxAttempts, RetryDelay)
	return nil
}

// ErrNotEmpty is what Run's error wraps when the database it was given
// holds registrations or the input's streams: nothing was changed.
var ErrNotEmpty = errors.New("the demo needs an empty database")

// checkEmpty refuses a database that holds registrations or the input's
// streams: the demo's workers would deliver other registrations (through a
// transport that allows loopback), and its appends would conflict.
func (s *scenario) checkEmpty(ctx context.Context) error {
	regs, err := s.cfg.Store.List(ctx, push.ListQuery{Limit: 1})
	if err != nil {
		return fmt.Errorf("read the database's registrations: %w", err)
	}
	if len(regs) > 0 {
		return fmt.Errorf("%s already has registrations (%s, …): %w, since its workers would deliver them too; omit --database to use a fresh one",
			s.cfg.Database, push.Name(regs[0].Stream, regs[0].ID), ErrNotEmpty)
	}
	for _, st := range s.cfg.Input.all() {
		head, err := s.cfg.Journal.Head(ctx, st.Name)
		if err != nil {
			return fmt.Errorf("read the head of %s: %w", st.Name, err)
		}
		if head > 0 {
			return fmt.Errorf("%s already holds the stream %s (from an earlier demo?): %w; omit --database to use a fresh one", s.cfg.Database, table.Clean(st.Name), ErrNotEmpty)
		}
	}
	return nil
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
	rows, err := s.rows(ctx)
	if err != nil {
		return err
	}
	if err := printRegistrations(s.out, rows); err != nil {
		return err
	}
	fmt.Fprint(s.out, `EXPECTED: what the journal says the receiver should get, the projection of the
stream's records (an inbox gets no Block of its actor and nothing addressed
only to others; an A2A registration ends at its task's terminal state).
VERIFIED: what the receiver itself verified, in order, of what it expected.
`)
	parked, err := s.cfg.Store.List(ctx, push.ListQuery{Parked: true, Limit: push.MaxListLimit})
	if err != nil {
		return err
	}
	fmt.Fprintln(s.out, "\n$ herald registrations --parked")
	return s.cfg.ShowRegistrations(s.out, parked)
}

// recover brings the down receivers back, unparks their registrations and
// waits until they caught up.
func (s *scenario) recover(ctx context.Context) error {
	s.rs.downCtl.up.Store(true)
	fmt.Fprintf(s.out, "\nThe %s receiver is back up.\n", DownName)
	var downs []*plan
	for _, p := range s.plans {
		if p.receiver != s.rs.down {
			continue
		}
		downs = append(downs, p)
		before, err := s.cfg.Store.Get(ctx, p.reg.Stream, p.reg.ID)
		if err != nil {
			return err
		}
		if err := s.cfg.Store.Unpark(ctx, p.reg.Stream, p.reg.ID, time.Now()); err != nil {
			return err
		}
		after, err := s.cfg.Store.Get(ctx, p.reg.Stream, p.reg.ID)
		if err != nil {
			return err
		}
		s.sum.Recovered = append(s.sum.Recovered, Recovery{Stream: p.reg.Stream, ID: p.reg.ID, WasParked: before.Parked, FromSeq: after.NextSeq})
		fmt.Fprintf(s.out, "$ herald unpark --stream %s --id %s\n", p.reg.Stream, p.reg.ID)
		if before.Parked {
			fmt.Fprintf(s.out, "Unparked %s: due now at cursor %d (%d records to deliver).\n", push.Name(p.reg.Stream, p.reg.ID), after.NextSeq, after.Lag())
		} else {
			fmt.Fprintf(s.out, "%s was not parked; nothing changed.\n", push.Name(p.reg.Stream, p.reg.ID))
		}
	}
	s.workers[webhook.Namespace].Wake()
	t := time.Now()
	if err := s.wait(ctx, downs); err != nil {
		return err
	}
	s.sum.RecoverSeconds = time.Since(t).Seconds()
	return nil
}

// finish reads the final state of every registration, judges the run and
// prints the verdict.
func (s *scenario) finish(ctx context.Context) error {
	rows, err := s.rows(ctx)
	if err != nil {
		return err
	}
	s.sum.Registrations = rows
	for _, r := range s.rs.all() {
		s.sum.Receivers = append(s.sum.Receivers, receiverSummary(r))
	}
	for i, rc := range s.sum.Recovered {
		for _, row := range rows {
			if row.Stream == rc.Stream && row.ID == rc.ID {
				rc.NextSeq, rc.Head, rc.Delivered, rc.Verified, rc.Expected = row.NextSeq, row.Head, row.Delivered, row.Verified, row.Expected
				rc.Recovered = !row.Parked && row.NextSeq == row.Head+1 && row.Verified == row.Expected
			}
		}
		s.sum.Recovered[i] = rc
		if rc.Recovered {
			fmt.Fprintf(s.out, "%s caught up in %.1fs: cursor %d → %d, %d messages delivered, %d of %d verified by the receiver.\n",
				push.Name(rc.Stream, rc.ID), s.sum.RecoverSeconds, rc.FromSeq, rc.NextSeq, rc.Delivered, rc.Verified, rc.Expected)
		}
	}
	s.sum.Failures = append(s.sum.Failures, judge(s.sum)...)
	s.sum.OK = len(s.sum.Failures) == 0
	s.sum.Seconds = time.Since(s.started).Seconds()
	printVerdict(s.out, s.sum)
	return nil
}

// plural writes n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
