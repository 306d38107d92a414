package push

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/heraldpush/herald/journal"
)

// Worker sweeps one namespace: it claims due registrations, projects their
// records and delivers the messages, moving cursors only on acknowledgement.
// A Worker is safe for concurrent use; several workers (in one process or
// many) may share a store.
type Worker struct {
	journal    journal.Journal
	store      Store
	transport  Transport
	projection Projection
	namespace  string
	opts       options
	wake       chan struct{}
	claims     atomic.Uint64 // numbers this worker's sweeps, for their lease owners
	hosts      HostStore     // nil: host health is off (the store keeps none)
	book       hostBook      // the troubled hosts this worker knows of
}

// NewWorker returns a worker for p.Namespace(). Errors wrap
// journal.ErrInvalid: a nil dependency, a bad namespace, or an option out of
// range (all of them are reported together).
func NewWorker(j journal.Journal, s Store, t Transport, p Projection, opts ...Option) (*Worker, error) {
	if j == nil || s == nil || t == nil || p == nil {
		return nil, journal.Invalid("worker", "journal, store, transport and projection are all required")
	}
	ns := p.Namespace()
	if err := ValidateNamespace(ns); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("push: new worker: %w", err)
	}
	w := &Worker{journal: j, store: s, transport: t, projection: p, namespace: ns, opts: o, wake: make(chan struct{}, 1)}
	if hs, ok := s.(HostStore); ok && !o.noHostHealth {
		w.hosts = hs
	}
	return w, nil
}

// Namespace returns the namespace the worker serves.
func (w *Worker) Namespace() string { return w.namespace }

// Owner returns the worker's name. Each sweep stamps the leases it takes
// with Owner()+"#"+n, n counting the worker's sweeps, so that a turn of an
// earlier sweep that outlived its lease is fenced out too.
func (w *Worker) Owner() string { return w.opts.owner }

// Register validates r (and its config, when the projection is a
// ConfigValidator), requires r.Namespace to be the worker's (empty means the
// worker's), and stores it. Errors: those of Registration.Validate,
// ConfigValidator.ValidateConfig and Store.Register.
func (w *Worker) Register(ctx context.Context, r Registration) (Registration, error) {
	if r.Namespace == "" {
		r.Namespace = w.namespace
	}
	if r.Namespace != w.namespace {
		return Registration{}, journal.Invalid("namespace", "%q is not %q, the namespace this worker serves", r.Namespace, w.namespace)
	}
	if err := r.Validate(); err != nil {
		return Registration{}, err
	}
	if v, ok := w.projection.(ConfigValidator); ok {
		if err := v.ValidateConfig(r); err != nil {
			return Registration{}, err
		}
	}
	return w.store.Register(ctx, r)
}

// RunOnce is one sweep at instant at: it claims up to limit due
// registrations of the worker's namespace and serves them, at most
// MaxInFlight at once, each strictly in order (package doc, "The sweep").
//
// It reads no clock for the schedule: at decides due-ness, backoff, lease
// expiry and signature dates, so the same inputs give the same schedule. Real
// durations bound only the network: the transport's timeouts, and the
// sweep's budget of half the lease (from the claim), after which no turn
// starts a new record and an unstarted turn releases its claim, so that no
// turn runs on after another worker may have claimed it. Writes are fenced by the lease (see Claim): a
// turn that lost its lease anyway changes nothing and is counted in
// LeasesLost. Turns are independent: a
// store or journal error ends only its own turn (no attempt is counted
// against the receiver) and RunOnce returns the first such error together
// with the report of everything done; progress already made stays. If ctx
// ends, requests in flight are abandoned uncounted, progress made so far is
// saved, and RunOnce returns ctx's error.
//
// Errors: journal.ErrInvalid for limit < 1 or a zero at; otherwise the first
// store or journal error, wrapped with the registration it concerns.
func (w *Worker) RunOnce(ctx context.Context, at time.Time, limit int) (SweepReport, error) {
	return w.sweep(ctx, ctx.Done(), at, limit)
}

// Run sweeps every interval with the wall clock (the one place herald reads
// it), and at once after Wake or after a sweep that left work due (Saturated,
// or a turn stopped at a full drain page: Backlog), until ctx ends. On
// ctx's end it starts no new record, lets deliveries in flight finish or time
// out, saves progress and returns nil. Sweep errors are logged and retried at
// the next interval, so a database outage does not stop the loop. Errors:
// journal.ErrInvalid for every <= 0.
func (w *Worker) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return journal.Invalid("every", "is %v: it must be positive", every)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0 // consecutive failed sweeps: logged when they start and end, not every interval
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-w.wake:
		}
		// The sweep keeps its context when ctx ends: what is in flight
		// finishes or times out, and progress is saved; ctx.Done() only
		// stops new records from starting.
		r, err := w.sweep(context.WithoutCancel(ctx), ctx.Done(), time.Now(), w.opts.sweepLimit)
		switch {
		case err != nil && ctx.Err() == nil:
			failures++
			if failures == 1 {
				w.opts.logger.Error("herald: sweep failed; retrying every interval until it recovers", "namespace", w.namespace, "err", err)
			} else {
				w.opts.logger.Debug("herald: sweep failed again", "namespace", w.namespace, "failures", failures, "err", err)
			}
		case err == nil && failures > 0:
			w.opts.logger.Info("herald: sweeps recovered", "namespace", w.namespace, "failed_sweeps", failures)
			failures = 0
		}
		next := every
		if (r.Saturated || r.Backlog > 0) && err == nil {
			next = 0 // more is due now: do not wait an interval per page
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// Wake makes Run sweep at once (after an append, say). It never blocks.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Worker) sweep(ctx context.Context, stop <-chan struct{}, at time.Time, limit int) (rep SweepReport, err error) {
	if limit < 1 {
		return rep, journal.Invalid("limit", "is %d: it must be at least 1", limit)
	}
	if at.IsZero() {
		return rep, journal.Invalid("at", "is the zero time")
	}
	if h := w.opts.hooks.Sweep; h != nil {
		started := time.Now()
		defer func() { h(at, rep, time.Since(started), err) }()
	}
	owner := fmt.Sprintf("%s#%d", w.opts.owner, w.claims.Add(1))
	batch, err := w.due(ctx, DueQuery{At: at, Limit: limit, Namespace: w.namespace, Owner: owner, LeaseUntil: at.Add(w.opts.lease)})
	if err != nil {
		return rep, fmt.Errorf("push: claim due registrations of %s: %w", w.namespace, err)
	}
	rep.Saturated = batch.More
	rep.Unserved = batch.Unserved
	rep.Registrations = len(batch.Registrations)
	// Every claim of this sweep holds one lease, from now: a turn starts no
	// record past half of it (measured on the real clock, as network
	// timeouts are), even if it waited for its place among MaxInFlight, so
	// that no turn runs on after another worker may have claimed it.
	deadline := time.Now().Add(w.opts.lease / 2)

	var (
		mu       sync.Mutex
		firstErr error
		g        errgroup.Group // no shared cancellation: one turn's failure never stops another
	)
	g.SetLimit(w.opts.maxInFlight)
	for _, st := range batch.Registrations {
		g.Go(func() error {
			t := turn{w: w, at: at, stop: stop, deadline: deadline, reg: st.Registration, head: st.Head, claim: st.Claim()}
			terr := t.run(ctx)
			mu.Lock()
			rep.add(t.rep)
			if terr != nil {
				rep.Errors++
				if firstErr == nil {
					firstErr = fmt.Errorf("push: %s/%s: %w", st.Stream, st.ID, terr)
				}
			}
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return rep, firstErr
}
