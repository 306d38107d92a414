package push

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldpush/herald/journal"
)

// Worker sweeps one namespace: it claims due registrations, projects their
// records and delivers the messages, moving cursors only on acknowledgement.
// A Worker is safe for concurrent use; several workers (in one process or
// many) may share a store.
type Worker struct {
	journal    journal.Journal // the caller's, behind the turns' shared pages (pages.go)
	store      Store           // the caller's, its Advance coalesced if it batches (cursors.go)
	transport  Transport
	projection Projection
	namespace  string
	opts       options
	wake       chan struct{}
	claims     atomic.Uint64 // numbers this worker's claims, for their lease owners
	hosts      HostStore     // nil: host health is off (the store keeps none)
	book       hostBook      // the troubled hosts this worker knows of
	perHost    *hostTable    // what the worker has in flight per host
	turns      atomic.Int64  // turns in flight, for Load
	waiting    atomic.Int64  // claims held that wait for a slot: a turn gives its slot up to them (turn.goOn)
	wakes      atomic.Uint64 // Wake calls: a turn of Run that ran across one reads its stream again (turn.woken)
	tracer     trace.Tracer  // spans.go
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
	w := &Worker{journal: newPages(j, o.lease), store: withGroupCommit(s), transport: t, projection: p, namespace: ns, opts: o, tracer: o.tracer(),
		wake: make(chan struct{}, 1), perHost: newHostTable(o.maxPerHost)}
	if hs, ok := s.(HostStore); ok && !o.noHostHealth {
		w.hosts = hs
	}
	return w, nil
}

// MaxPerHost returns the worker's cap on messages in flight to one host
// (WithMaxPerHost), which also caps what a window above it has in flight.
func (w *Worker) MaxPerHost() int { return w.opts.maxPerHost }

// Namespace returns the namespace the worker serves.
func (w *Worker) Namespace() string { return w.namespace }

// Owner returns the worker's name. Each claim (a sweep's, or a refill of
// Run's dispatcher) stamps the leases it takes with Owner()+"#"+n, n counting
// the worker's claims, so that a turn of an earlier claim that outlived its
// lease is fenced out too.
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
// MaxInFlight at once and at most MaxPerHost of one host at once, each
// in order through its window (package doc, "The sweep", "Windows"); then it returns. It is
// scheduler mode's unit; Run is the daemon's loop. Overlapping RunOnce
// calls, on one worker or many, and RunOnce beside Run, are safe: each
// claim takes its own lease, which fences every write (see Claim), so a
// registration is served by one of them at a time.
//
// It reads no clock for the schedule: at decides due-ness, backoff, lease
// expiry and signature dates, so the same inputs give the same schedule. Real
// durations bound only the network: the transport's timeouts, and the
// sweep's budget of half the lease (from the claim), after which no turn
// starts a new record and an unstarted turn releases its claim, so that no
// turn runs on after another worker may have claimed it. A turn that lost
// its lease anyway changes nothing and is counted in LeasesLost. Turns are
// independent: a store or journal error ends only its own turn (no attempt
// is counted against the receiver) and RunOnce returns the first such error
// together with the report of everything done; progress already made stays.
// If ctx ends, requests in flight are abandoned uncounted, progress made so
// far is saved, and RunOnce returns ctx's error.
//
// Errors: journal.ErrInvalid for limit < 1 or a zero at; otherwise the first
// store or journal error, wrapped with the registration it concerns.
func (w *Worker) RunOnce(ctx context.Context, at time.Time, limit int) (SweepReport, error) {
	return w.sweep(ctx, ctx.Done(), at, limit)
}

// Wake makes Run claim at once (after an append, say). It never blocks.
func (w *Worker) Wake() {
	w.wakes.Add(1)
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
	ctx, span := w.startSweep(ctx)
	defer func() { endSweep(span, rep, err) }()
	if h := w.opts.hooks.Sweep; h != nil {
		started := time.Now()
		defer func() { h(at, rep, time.Since(started), err) }()
	}
	batch, err := w.claim(ctx, at, limit, false)
	if err != nil {
		return rep, err
	}
	rep.Saturated = batch.More
	rep.Unserved = batch.Unserved
	rep.Registrations = len(batch.Registrations)
	// Every claim of this sweep holds one lease, from now: a turn starts no
	// record past half of it (measured on the real clock, as network
	// timeouts are), even if it waited for its place among MaxInFlight or
	// its host's MaxPerHost, so that no turn runs on after another worker
	// may have claimed it.
	claimedAt := time.Now()

	// Turns start in claim order, skipping a host at its cap, so that one
	// host's registrations never hold the slots another host could use.
	// No shared cancellation: one turn's failure never stops another.
	//
	// w.waiting counts, of this sweep's queue, the claims a freed slot
	// would start (their host under its cap): a turn gives its slot up to
	// them (turn.goOn), never to a claim its host's cap holds back anyway.
	// Those held back wait for a turn of their own host, which gives its
	// slot up to them (held).
	type queued struct {
		st   Status
		host string
	}
	type ended struct {
		host string
		rep  SweepReport
		err  error
	}
	queue := make([]queued, len(batch.Registrations))
	held := map[string]*atomic.Int64{} // per host: its claims in the queue
	for i, st := range batch.Registrations {
		queue[i] = queued{st: st, host: st.Host()}
		if held[queue[i].host] == nil {
			held[queue[i].host] = &atomic.Int64{}
		}
		held[queue[i].host].Add(1)
	}
	var (
		perHost  = map[string]int{}
		running  int
		done     = make(chan ended, len(queue))
		firstErr error
		waiting  int64 // this sweep's part of w.waiting
	)
	defer func() { w.waiting.Add(-waiting) }()
	for len(queue) > 0 || running > 0 {
		var starts []queued
		for i := 0; i < len(queue) && running < w.opts.maxInFlight; {
			q := queue[i]
			if perHost[q.host] >= w.opts.maxPerHost {
				i++
				continue
			}
			queue = append(queue[:i:i], queue[i+1:]...)
			held[q.host].Add(-1)
			perHost[q.host]++
			running++
			starts = append(starts, q)
		}
		// Counted before the turns start, so that none sees a count that
		// is not this pass's.
		var startable int64
		for _, q := range queue {
			if perHost[q.host] < w.opts.maxPerHost {
				startable++
			}
		}
		w.waiting.Add(startable - waiting)
		waiting = startable
		for _, q := range starts {
			entry := w.perHost.enter(q.host)
			go func() {
				trep, terr := w.serve(ctx, stop, at, claimedAt, q.st, entry, held[q.host], nil)
				w.perHost.leave(q.host)
				done <- ended{host: q.host, rep: trep, err: terr}
			}()
		}
		e := <-done
		running--
		perHost[e.host]--
		rep.add(e.rep)
		if e.err != nil && firstErr == nil {
			firstErr = e.err
		}
	}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return rep, firstErr
}

// claim asks the store for up to limit registrations due at at, under a
// lease owner of its own; capped, no more of a host than the worker may
// still serve there at once.
func (w *Worker) claim(ctx context.Context, at time.Time, limit int, capped bool) (DueBatch, error) {
	q := DueQuery{At: at, Limit: limit, Namespace: w.namespace, Owner: fmt.Sprintf("%s#%d", w.opts.owner, w.claims.Add(1)),
		LeaseUntil: at.Add(w.opts.lease)}
	if capped {
		q.MaxPerHost, q.Busy = w.opts.maxPerHost, w.perHost.busy()
	}
	batch, err := w.due(ctx, q) // learns the troubled hosts too
	if err != nil {
		err = fmt.Errorf("push: claim due registrations of %s: %w", w.namespace, err)
	}
	if h := w.opts.hooks.Claim; h != nil {
		h(at, len(batch.Registrations), err)
	}
	return batch, err
}

// serve runs one turn of a claimed registration, whose host entry the
// caller entered, and returns its report and its error, wrapped with the
// registration.
//
// held, if not nil, counts the claims of the turn's host that its sweep
// holds back for the host's cap: the turn gives its slot up to them too.
// wakes, if not nil (Run's turns), is the worker's count of Wake calls
// before the claim was made: a turn that ran across a later one reads its
// stream again before it releases its claim (turn.woken), and leaves in
// *wakes the count it last read at.
func (w *Worker) serve(ctx context.Context, stop <-chan struct{}, at, claimedAt time.Time, st Status, host *hostEntry,
	held *atomic.Int64, wakes *uint64) (SweepReport, error) {
	w.turns.Add(1)
	defer w.turns.Add(-1)
	started := time.Now()
	t := turn{w: w, at: at, stop: stop, deadline: claimedAt.Add(w.opts.lease / 2), reg: st.Registration, head: st.Head,
		claim: st.Claim(), host: host, held: held, wakes: wakes}
	// claimedAt is after the claim's Due returned: the turn's journal reads
	// may share pages read since, and only those (pages.go).
	ctx = withReadClaim(ctx, claimedAt, st.Head)
	// The lease bounds the turn on the real clock, as the budget does: a
	// delivery still in flight near the lease's end (a slow receiver, or a
	// wait for one of its host's tokens) is abandoned uncounted, so that no
	// turn sends after another worker may have claimed its registration.
	ctx, cancel := context.WithDeadlineCause(ctx, claimedAt.Add(w.opts.lease-w.opts.lease/10), errLeaseEnding)
	defer cancel()
	ctx, span := t.startTurn(ctx)
	err := t.run(ctx)
	endTurn(span, t.rep, err)
	t.rep.Registrations = 1
	if err != nil {
		t.rep.Errors = 1
		err = fmt.Errorf("push: %s: %w", Name(st.Stream, st.ID), err)
	}
	if h := w.opts.hooks.Turn; h != nil {
		h(at, t.rep, time.Since(started), err)
	}
	return t.rep, err
}

// Load is what a worker has in flight at one instant, for metrics.
type Load struct {
	Turns      int // turns running (registrations being served)
	Messages   int // messages being sent (host tokens held)
	Hosts      int // hosts with a claim of this worker (running or ready)
	HostsAtCap int // hosts with MaxPerHost claims: claims take no more of them
}

// Load reads what the worker has in flight. It is cheap (one short lock) and
// safe to call at any time.
func (w *Worker) Load() Load {
	l := Load{Turns: int(w.turns.Load())}
	l.Messages, l.Hosts, l.HostsAtCap = w.perHost.load()
	return l
}
