package push

import (
	"context"
	"fmt"
	"sync/atomic"

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
	book       hostBook      // the troubled hosts this worker knows of
	perHost    *hostTable    // what the worker has in flight per host
	turns      atomic.Int64  // turns in flight, for Load
	waiting    atomic.Int64  // claims held that a freed slot would start: a turn gives its slot up to them (turn.goOn)
	wakes      atomic.Uint64 // Wake calls: a turn that ran across one reads its stream again (turn.woken)
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
	return &Worker{journal: newPages(j, o.lease), store: withGroupCommit(s), transport: t, projection: p, namespace: ns, opts: o, tracer: o.tracer(),
		wake: make(chan struct{}, 1), perHost: newHostTable(o.maxPerHost)}, nil
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

// Wake makes Run claim at once (after an append, say). It never blocks.
func (w *Worker) Wake() {
	w.wakes.Add(1)
	select {
	case w.wake <- struct{}{}:
	default:
	}
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
