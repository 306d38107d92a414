package dispatch

import (
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push/internal/groupcommit"
	"github.com/heraldpush/herald/push/internal/hosts"
	"github.com/heraldpush/herald/push/internal/pages"
	"github.com/heraldpush/herald/push/wire"
	"github.com/heraldpush/herald/store"
)

// Engine serves one namespace for a push.Worker (package doc). It is safe
// for concurrent use.
type Engine struct {
	journal    journal.Journal // the caller's, behind the turns' shared pages (internal/pages)
	records    journal.Journal // the caller's itself, for resends (resend.go)
	store      store.Store     // the caller's, its Advance coalesced if it batches (internal/groupcommit)
	transport  wire.Transport
	projection wire.Projection
	namespace  string
	cfg        Config
	wake       chan struct{}
	claims     atomic.Uint64   // numbers this worker's claims, for their lease owners
	book       hosts.Book      // the troubled hosts this worker knows of
	failing    failLog         // the failing registrations' last log lines
	perHost    *hosts.Table    // what the worker has in flight per host
	turns      atomic.Int64    // turns in flight, for Load
	slowTurns  atomic.Int64    // of them, those in the slow budget, for Load
	waiting    [2]atomic.Int64 // claims held that a freed slot would start, regular and slow: a turn gives its slot up to them (turn.goOn)
	wakes      atomic.Uint64   // Wake calls: a turn that ran across one reads its stream again (turn.woken)
	tracer     trace.Tracer    // spans.go
}

// Config is a worker's settings, checked by push.NewWorker; push's options
// say each.
type Config struct {
	MaxRetryAfter   time.Duration
	MaxInFlight     int
	MaxSlow         int
	MaxPerHost      int
	DrainPage       int
	PageBytes       int
	Lease           time.Duration
	SweepLimit      int
	HostHorizon     time.Duration
	Owner           string
	Logger          *slog.Logger
	Hooks           wire.Hooks
	TracerProvider  trace.TracerProvider // nil: otel's global
	Retry           store.RetryPolicy    // for registrations without their own
	Now             func() time.Time     // a turn's budget's wall clock
	SlowAfter       time.Duration        // push.SlowAfter
	MinBurstSpacing time.Duration        // push.MinBurstSpacing
}

// New returns the engine of a worker for namespace, which serves p's
// registrations in j through s and t under cfg.
func New(j journal.Journal, s store.Store, t wire.Transport, p wire.Projection, namespace string, cfg Config) *Engine {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &Engine{journal: pages.New(j, cfg.Lease), records: j, store: groupcommit.Wrap(s), transport: t, projection: p,
		namespace: namespace, cfg: cfg, tracer: tp.Tracer("github.com/heraldpush/herald/push"), wake: make(chan struct{}, 1), perHost: hosts.NewTable(cfg.MaxPerHost)}
}

// Wake makes Run claim at once. It never blocks.
func (w *Engine) Wake() {
	w.wakes.Add(1)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Load reads what the worker has in flight (one short lock): turns
// running, of them those in the slow budget, messages being sent, hosts
// with a claim, hosts at their cap.
func (w *Engine) Load() (turns, slow, messages, busyHosts, atCap int) {
	messages, busyHosts, atCap = w.perHost.Load()
	return int(w.turns.Load()), int(w.slowTurns.Load()), messages, busyHosts, atCap
}
