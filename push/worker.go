package push

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push/internal/dispatch"
	"github.com/heraldpush/herald/store"
)

// Worker serves one namespace (package doc). It is safe for concurrent use;
// several workers, in one process or many, may share a store.
type Worker struct {
	engine     *dispatch.Engine // the dispatcher and its turns (push/internal/dispatch)
	store      store.Store
	projection Projection
	namespace  string
	opts       options
}

// NewWorker returns a worker for p.Namespace(). Errors wrap
// journal.ErrInvalid: a nil dependency, a bad namespace, or options out of
// range (all reported together).
func NewWorker(j journal.Journal, s store.Store, t Transport, p Projection, opts ...Option) (*Worker, error) {
	if j == nil || s == nil || t == nil || p == nil {
		return nil, journal.Invalid("worker", "journal, store, transport and projection are all required")
	}
	ns := p.Namespace()
	if err := store.ValidateNamespace(ns); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("push: new worker: %w", err)
	}
	retry := DefaultRetry
	if d, ok := p.(RetryDefaulter); ok {
		retry = d.DefaultRetry()
	}
	o.Retry = RetryPolicy{Schedule: o.schedule, MaxAttempts: o.maxAttempts}.Or(retry)
	return &Worker{engine: dispatch.New(j, s, t, p, ns, o.Config), store: s, projection: p, namespace: ns, opts: o}, nil
}

// MaxPerHost returns the worker's cap on messages in flight to one host
// (WithMaxPerHost), which also caps a larger window.
func (w *Worker) MaxPerHost() int { return w.opts.MaxPerHost }

// Retry returns the retry policy of the worker's registrations that have
// none of their own: WithSchedule and WithMaxAttempts, else the namespace's.
func (w *Worker) Retry() RetryPolicy { return w.opts.Retry }

// Namespace returns the namespace the worker serves.
func (w *Worker) Namespace() string { return w.namespace }

// Owner returns the worker's name. Claim n stamps its leases Owner()+"#"+n,
// so that a turn of an earlier claim that outlived its lease is fenced out.
func (w *Worker) Owner() string { return w.opts.Owner }

// Register validates r (and its config, if the projection is a
// ConfigValidator) and stores it; r.Namespace must be the worker's (empty
// means the worker's). Errors: those of Registration.Validate,
// ConfigValidator.ValidateConfig and Store.Register.
func (w *Worker) Register(ctx context.Context, r store.Registration) (store.Registration, error) {
	if r.Namespace == "" {
		r.Namespace = w.namespace
	}
	if err := w.Check(r); err != nil {
		return store.Registration{}, err
	}
	return w.store.Register(ctx, r)
}

// Check is Register's checks of r, storing nothing: of its namespace (this
// worker's), Registration.Validate and the projection's ValidateConfig. A
// subscription's template (store.Subscription.Template) is checked so.
func (w *Worker) Check(r store.Registration) error {
	if r.Namespace != w.namespace {
		return journal.Invalid("namespace", "%q is not %q, the namespace this worker serves", r.Namespace, w.namespace)
	}
	if err := r.Validate(); err != nil {
		return err
	}
	if v, ok := w.projection.(ConfigValidator); ok {
		return v.ValidateConfig(r)
	}
	return nil
}

// Wake makes Run claim at once (after an append, say). It never blocks.
func (w *Worker) Wake() { w.engine.Wake() }

// RunOnce is one sweep at instant at: it claims up to limit due
// registrations and serves them (package doc, "Turns"), and up to limit
// pending resends and sends them (package doc, "Resends"). A store or journal
// error ends only its own turn, uncharged; RunOnce returns the first with the
// report of all that was done. If ctx ends, what is in flight is abandoned
// uncounted, progress saved, and ctx's error returned. Errors:
// journal.ErrInvalid for limit < 1 or a zero at.
func (w *Worker) RunOnce(ctx context.Context, at time.Time, limit int) (SweepReport, error) {
	return w.engine.RunOnce(ctx, at, limit)
}

// Run is the daemon's loop (package doc, "Scheduling"), claiming at least
// every interval. When ctx ends it gives back the claims not started, lets
// the turns in flight finish and returns nil. A store or journal error is
// logged once until claims succeed again with no turn failing. Errors:
// journal.ErrInvalid for every <= 0.
func (w *Worker) Run(ctx context.Context, every time.Duration) error { return w.engine.Run(ctx, every) }

// Load is what a worker has in flight at one instant, for metrics.
type Load struct {
	Turns      int // turns running (registrations being served)
	Slow       int // of Turns, those whose message waited SlowAfter, in the slow budget (WithMaxSlow)
	Messages   int // messages being sent (host tokens held)
	Hosts      int // hosts with a claim of this worker (running or ready)
	HostsAtCap int // hosts with MaxPerHost claims: claims take no more of them
}

// Load reads what the worker has in flight (one short lock).
func (w *Worker) Load() Load {
	var l Load
	l.Turns, l.Slow, l.Messages, l.Hosts, l.HostsAtCap = w.engine.Load()
	return l
}

// Defaults, each with the reason it is what it is.
const (
	// DefaultMaxAttempts (32) is the retry ceiling of a namespace that
	// states none (DefaultRetry): with the default backoff, about 80
	// minutes of an unreachable receiver, enough to ride out a deploy.
	// Parking loses nothing.
	DefaultMaxAttempts = 32
	// DefaultMaxRetryAfter (1 h) caps a receiver's Retry-After, so that
	// "Retry-After: 31536000" cannot silence a registration for a year.
	DefaultMaxRetryAfter = time.Hour
	// DefaultMaxInFlight (256) bounds the turns run at once whose receivers
	// answer within SlowAfter. A slot turns over in about twice its
	// receiver's answer time (the claim, the signature waiting for a core,
	// the cursor's write), so at 50 ms an answer 64 slots gave 620
	// deliveries a second and 256 keep two cores busy signing RSA-2048: a
	// fediverse post to 10,000 inboxes on 1,000 hosts within 10 s
	// (BENCHMARKS.md 12.7). Slow receivers wait in MaxSlow, not here, so
	// the slots are all working; MaxPerHost keeps any one host to 4.
	DefaultMaxInFlight = 256
	// SlowAfter (1 s) is how long a message may wait for its answer before
	// its turn leaves MaxInFlight for the slow budget: a receiver that
	// answers at all answers in a few hundred milliseconds (an inbox
	// enqueues and says 202), so past a second the turn waits on its
	// receiver, and its slot is better given to one that is waiting on it.
	SlowAfter = time.Second
	// MinBurstSpacing (250 ms) bounds how often a rate-limited registration
	// is claimed: four times a second at most, a burst each. A claim costs
	// the store more than a message costs the receiver, so a 10/s endpoint
	// is served 5 at a time, not one claim a record; and a record that
	// arrives after a burst waits at most this long for the next (package
	// doc, "Rate").
	MinBurstSpacing = 250 * time.Millisecond
	// DefaultMaxSlow (256) bounds the turns whose message passed SlowAfter
	// that go on to their next record: each holds a socket and a page.
	// 256 holds 64 silent hosts at the default MaxPerHost. A message in
	// flight cannot be hurried, so more slow turns leave MaxInFlight when
	// more go slow at once; each of those ends after its message when a
	// claim waits (WithMaxSlow).
	DefaultMaxSlow = 256
	// DefaultMaxPerHost (4) bounds the messages in flight to one host:
	// polite to the small servers most receivers are, and a silent host
	// holds at most 4 of the 16 slots.
	DefaultMaxPerHost = 4
	// MaxPerHostLimit (1024) is the transport's bound on a host's idle
	// connections, beyond which a cap is a load test.
	MaxPerHostLimit = 1024
	// DefaultDrainPage (256): the cursor is written once per 256 records, a
	// crash repeats at most 256, and a turn with a backlog reaches a page's
	// end, where it yields its slot, often.
	DefaultDrainPage = 256
	MaxDrainPage     = 10000 // bounds WithDrainPage
	// DefaultPageBytes (1 MiB, journal.DefaultMaxPayload) bounds the
	// payloads of a turn's page: a full drain page of 1–4 KiB activities
	// fits, and as a page holds at least one record, up to the store's
	// payload limit, a lower bound would split ordinary pages without
	// lowering what a turn may hold. Each turn in flight (MaxInFlight, and
	// MaxSlow waiting on slow receivers) holds one page.
	DefaultPageBytes = 1 << 20
	MaxPageBytes     = 1 << 30 // bounds WithPageBytes
	// DefaultLease (6 s) is how long a claim hides a registration from
	// other workers, and so about how long a killed worker's registrations
	// wait. A turn's lease is renewed while it runs, so a receiver may take
	// longer (README.md, invariant 7).
	DefaultLease = 6 * time.Second
	// MaxLease (1 h) bounds WithLease: a turn renews its lease while it
	// runs, so a longer one serves no receiver and only keeps a killed
	// worker's registrations waiting (and far past it, a lease's end is past
	// the instants a store keeps, and every claim fails).
	MaxLease = time.Hour
	// DefaultSweepLimit (256) bounds one claim of Run's dispatcher: one Due
	// query's rows.
	DefaultSweepLimit = 256
)

// options are the engine's settings and those NewWorker turns into its
// retry policy.
type options struct {
	dispatch.Config
	maxAttempts    int // 0: the namespace's ceiling
	maxAttemptsSet bool
	schedule       Schedule
}

// Option configures a Worker. NewWorker checks them all; a count below its
// bound is an error, never a silent "off".
type Option func(*options)

// WithMaxAttempts sets the worker's retry ceiling, at least 1, for the
// registrations without their own (Registration.Retry), in place of the
// namespace's (RetryDefaulter): the failure that makes a registration's
// attempts at one record equal n parks it.
func WithMaxAttempts(n int) Option {
	return func(o *options) { o.maxAttempts, o.maxAttemptsSet = n, true }
}

// WithMaxRetryAfter caps a receiver's Retry-After, at least 1 s (default
// DefaultMaxRetryAfter).
func WithMaxRetryAfter(d time.Duration) Option { return func(o *options) { o.MaxRetryAfter = d } }

// WithMaxInFlight bounds the turns a worker runs at once, at least 1
// (default DefaultMaxInFlight).
func WithMaxInFlight(n int) Option { return func(o *options) { o.MaxInFlight = n } }

// WithMaxSlow bounds the turns a worker runs at once whose message has
// waited SlowAfter for its answer, beside MaxInFlight, at least 0 (default
// DefaultMaxSlow). A message that waits SlowAfter moves its turn out of
// MaxInFlight even with the slow budget full, so that silent hosts never
// hold the slots (each would hold one to the request's timeout); a turn
// past the budget ends after that message when another claim waits. The
// host is then slow for a minute, or until a turn of it is answered within
// SlowAfter: its claims start in the slow budget, or wait for room there.
// 0 keeps a slow turn in its slot, which it gives up at its next record
// when another claim waits.
func WithMaxSlow(n int) Option { return func(o *options) { o.MaxSlow = n } }

// WithMaxPerHost bounds the messages in flight to one host (store.HostOf), 1 to
// MaxPerHostLimit (default DefaultMaxPerHost); claims take no more of a host.
func WithMaxPerHost(n int) Option { return func(o *options) { o.MaxPerHost = n } }

// WithDrainPage bounds the records a turn sends between two writes of the
// cursor, 1 to MaxDrainPage (default DefaultDrainPage): the bound on
// duplicates after a crash.
func WithDrainPage(n int) Option { return func(o *options) { o.DrainPage = n } }

// WithPageBytes bounds the payload bytes of a turn's page, 1 to
// MaxPageBytes (default DefaultPageBytes): a page stops before the record
// that would pass it, and a record larger than n is read alone.
func WithPageBytes(n int) Option { return func(o *options) { o.PageBytes = n } }

// WithLease sets how long a claim lasts, 2 s to MaxLease (default DefaultLease).
func WithLease(d time.Duration) Option { return func(o *options) { o.Lease = d } }

// WithSweepLimit bounds each claim of Run, at least 1 (default
// DefaultSweepLimit).
func WithSweepLimit(n int) Option { return func(o *options) { o.SweepLimit = n } }

// WithOwner names this worker in its leases (default: host name, process id
// and a random suffix). Two workers must never share an owner.
func WithOwner(owner string) Option { return func(o *options) { o.Owner = owner } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.Logger = l } }

// WithSchedule sets the worker's delays, each at least 1 s, for the
// registrations without their own schedule (Registration.Retry), in place
// of the namespace's.
func WithSchedule(s Schedule) Option { return func(o *options) { o.schedule = s } }

// WithHostHorizon sets how long a host may be down before it is
// unavailable, store.MinHostHorizon to store.MaxHostHorizon (default
// store.DefaultHostHorizon).
func WithHostHorizon(d time.Duration) Option { return func(o *options) { o.HostHorizon = d } }

// WithTracerProvider sets where the worker's spans go (default
// otel.GetTracerProvider(), a no-op until a program installs an SDK).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.TracerProvider = tp }
}

// WithHooks sets functions called for metrics. They are called
// concurrently and must not block.
func WithHooks(h Hooks) Option { return func(o *options) { o.Hooks = h } }

func defaultOptions() options {
	return options{Config: dispatch.Config{
		MaxRetryAfter:   DefaultMaxRetryAfter,
		MaxInFlight:     DefaultMaxInFlight,
		MaxSlow:         DefaultMaxSlow,
		MaxPerHost:      DefaultMaxPerHost,
		DrainPage:       DefaultDrainPage,
		PageBytes:       DefaultPageBytes,
		Lease:           DefaultLease,
		SweepLimit:      DefaultSweepLimit,
		HostHorizon:     store.DefaultHostHorizon,
		Now:             time.Now,
		SlowAfter:       SlowAfter,
		MinBurstSpacing: MinBurstSpacing,
	}}
}

func (o *options) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) { errs = append(errs, journal.Invalid(field, format, args...)) }
	if o.maxAttempts < 0 || o.maxAttempts == 0 && o.maxAttemptsSet {
		bad("MaxAttempts", "is %d: it must be at least 1 (1 means a single try)", o.maxAttempts)
	}
	if o.MaxInFlight < 1 {
		bad("MaxInFlight", "is %d: it must be at least 1", o.MaxInFlight)
	}
	if o.MaxSlow < 0 {
		bad("MaxSlow", "is %d: it must be 0 or more", o.MaxSlow)
	}
	if o.MaxPerHost < 1 || o.MaxPerHost > MaxPerHostLimit {
		bad("MaxPerHost", "is %d: it must be from 1 to %d", o.MaxPerHost, MaxPerHostLimit)
	}
	if o.DrainPage < 1 || o.DrainPage > MaxDrainPage {
		bad("DrainPage", "is %d: it must be from 1 to %d", o.DrainPage, MaxDrainPage)
	}
	if o.PageBytes < 1 || o.PageBytes > MaxPageBytes {
		bad("PageBytes", "is %d: it must be from 1 to %d", o.PageBytes, MaxPageBytes)
	}
	if o.Lease < 2*time.Second || o.Lease > MaxLease {
		bad("Lease", "is %v: it must be from 2s to %v", o.Lease, MaxLease)
	}
	if o.MaxRetryAfter < time.Second {
		bad("MaxRetryAfter", "is %v: it must be at least 1s", o.MaxRetryAfter)
	}
	if o.SweepLimit < 1 {
		bad("SweepLimit", "is %d: it must be at least 1", o.SweepLimit)
	}
	if o.schedule != nil && len(o.schedule) == 0 {
		bad("Schedule", "is empty")
	}
	for i, d := range o.schedule {
		if d < time.Second {
			bad(fmt.Sprintf("Schedule[%d]", i), "is %v: each delay must be at least 1s", d)
		}
	}
	if err := store.CheckHostHorizon("HostHorizon", o.HostHorizon); err != nil {
		errs = append(errs, err)
	}
	if o.Owner == "" {
		o.Owner = defaultOwner()
	} else if err := journal.ValidateID("Owner", o.Owner); err != nil {
		errs = append(errs, err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return errors.Join(errs...)
}

func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "herald"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
