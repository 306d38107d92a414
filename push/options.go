package push

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"crypto/rand"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldpush/herald/journal"
)

// Defaults, each with the reason it is what it is.
const (
	// DefaultMaxAttempts (32) is the retry ceiling: a registration is parked
	// on the failure that makes its attempts at one record reach it. With the
	// default backoff that is about 80 minutes of an unreachable receiver:
	// long enough to ride out a deploy or a restart, short enough that a dead
	// inbox stops costing a connection every few minutes. Parking loses
	// nothing; unpark resumes from the cursor.
	DefaultMaxAttempts = 32
	// DefaultMaxRetryAfter (1 h) caps a receiver's Retry-After, so that a
	// receiver answering "Retry-After: 31536000" cannot silence a
	// registration for a year without an operator seeing it parked.
	DefaultMaxRetryAfter = time.Hour
	// DefaultMaxInFlight (16) bounds the registrations a sweep serves at
	// once: each holds up to its window (default 1) of requests in flight, so 16 keeps a small
	// machine's sockets and the receivers' patience in check while hiding
	// most of the network latency.
	DefaultMaxInFlight = 16
	// DefaultMaxPerHost (4) bounds the messages a worker has in flight to one
	// host. Most fediverse and webhook receivers are small servers, for
	// which a few concurrent requests from one sender are polite; and a
	// silent host then holds at most 4 of the MaxInFlight (16) slots, so it
	// delays only its own registrations. A big receiver that takes many
	// registrations (one webhook service, one large instance) may be given
	// more with WithMaxPerHost.
	DefaultMaxPerHost = 4
	// MaxPerHostLimit (1024) bounds WithMaxPerHost: the transport's bound
	// on a host's idle connections, beyond which a cap is a load test.
	MaxPerHostLimit = 1024
	// DefaultDrainPage (256) bounds the records a turn reads at once and
	// sends before it writes the cursor: large enough that the cursor is
	// written once per 256 records, small enough that a crash repeats at
	// most 256 records and that a turn with a backlog reaches a page's end,
	// where it gives its slot up to a waiting claim, often.
	DefaultDrainPage = 256
	// DefaultLease (30 s) is how long a claimed registration stays invisible
	// to other workers, and so how long a killed worker's registrations
	// wait: two request timeouts. A turn starts no record once half of it
	// has passed, and abandons, uncounted, what is still in flight at nine
	// tenths of it, so the lease always outlives the turn.
	DefaultLease = 30 * time.Second
	// DefaultSweepLimit (256) bounds each claim of Run's dispatcher (which
	// claims no more than its free slots anyway): one Due query's rows.
	DefaultSweepLimit = 256
	// MaxDrainPage bounds WithDrainPage.
	MaxDrainPage = 10000
)

type options struct {
	maxAttempts    int
	maxRetryAfter  time.Duration
	maxInFlight    int
	maxPerHost     int
	drainPage      int
	lease          time.Duration
	sweepLimit     int
	owner          string
	logger         *slog.Logger
	schedule       Schedule
	hooks          Hooks
	hostPolicy     HostPolicy
	tracerProvider trace.TracerProvider // nil: otel's global
	now            func() time.Time     // the wall clock of a turn's budget; tests replace it (export_test.go)
}

// Option configures a Worker. Options are checked by NewWorker; a zero or
// negative count is an error there, never a silent "off".
type Option func(*options)

// WithMaxAttempts sets the retry ceiling (default DefaultMaxAttempts): the
// failure that makes a registration's attempts at one record equal n parks
// it. 1 means a single try. n must be at least 1.
func WithMaxAttempts(n int) Option { return func(o *options) { o.maxAttempts = n } }

// WithMaxRetryAfter caps a receiver's Retry-After (default
// DefaultMaxRetryAfter). At least 1 s.
func WithMaxRetryAfter(d time.Duration) Option { return func(o *options) { o.maxRetryAfter = d } }

// WithMaxInFlight bounds the turns (registrations served) a worker runs at
// once, in a sweep and in Run's dispatcher (default DefaultMaxInFlight). At
// least 1.
func WithMaxInFlight(n int) Option { return func(o *options) { o.maxInFlight = n } }

// WithMaxPerHost bounds the messages the worker has in flight to any one
// host (Registration.Host), 1 to MaxPerHostLimit (default
// DefaultMaxPerHost). Claims take no more of a host than that (DueQuery
// MaxPerHost and Busy), and each send holds one of the host's tokens.
func WithMaxPerHost(n int) Option { return func(o *options) { o.maxPerHost = n } }

// WithDrainPage bounds the records a turn reads and sends between two
// writes of the cursor (default DefaultDrainPage), 1 to MaxDrainPage. It is
// also the bound on duplicates after a crash (invariant 2).
func WithDrainPage(n int) Option { return func(o *options) { o.drainPage = n } }

// WithLease sets how long a claimed registration is invisible to other
// workers (default DefaultLease). At least 2 s.
func WithLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// WithSweepLimit bounds each claim of Run's dispatcher (default
// DefaultSweepLimit). At least 1.
func WithSweepLimit(n int) Option { return func(o *options) { o.sweepLimit = n } }

// WithOwner names this worker in the leases it takes (default: host name,
// process id and a random suffix). Two workers must never share an owner.
func WithOwner(owner string) Option { return func(o *options) { o.owner = owner } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithSchedule replaces the exponential Backoff with a fixed list of delays,
// each at least 1 s.
func WithSchedule(s Schedule) Option { return func(o *options) { o.schedule = s } }

// WithHostHorizon sets how long a host may be down before it is
// unavailable (default DefaultHostHorizon), MinHostHorizon to MaxHostHorizon.
func WithHostHorizon(d time.Duration) Option { return func(o *options) { o.hostPolicy.Horizon = d } }

// WithHooks sets functions called on every attempt, turn, claim and sweep,
// for metrics. They are called concurrently and must not block.
func WithHooks(h Hooks) Option { return func(o *options) { o.hooks = h } }

// Hooks observe a worker. Nil fields are skipped.
type Hooks struct {
	// Attempt is called after every delivery attempt.
	Attempt func(Attempt)
	// Turn is called after every turn (one registration served once, in
	// RunOnce or Run) with its report (Registrations 1), its wall-clock
	// duration and its store or journal error.
	Turn func(at time.Time, r SweepReport, took time.Duration, err error)
	// Claim is called after every Store.Due (each RunOnce, and each refill
	// of Run's dispatcher) with the registrations claimed and the error.
	Claim func(at time.Time, claimed int, err error)
	// Sweep is called after every RunOnce with its report, its wall-clock
	// duration and its error.
	Sweep func(at time.Time, r SweepReport, took time.Duration, err error)
	// HostFailure is called after every host-level failure recorded, with
	// the host as stored.
	HostFailure func(Host)
}

// Attempt describes one delivery attempt, for Hooks.Attempt.
type Attempt struct {
	Registration Registration
	Seq          uint64
	MessageID    string
	At           time.Time // the sweep's instant
	Outcome      Outcome
}

func defaultOptions() options {
	return options{
		maxAttempts:   DefaultMaxAttempts,
		maxRetryAfter: DefaultMaxRetryAfter,
		maxInFlight:   DefaultMaxInFlight,
		maxPerHost:    DefaultMaxPerHost,
		drainPage:     DefaultDrainPage,
		lease:         DefaultLease,
		sweepLimit:    DefaultSweepLimit,
		hostPolicy:    DefaultHostPolicy(),
		now:           time.Now,
	}
}

func (o *options) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) { errs = append(errs, journal.Invalid(field, format, args...)) }
	if o.maxAttempts < 1 {
		bad("MaxAttempts", "is %d: it must be at least 1 (1 means a single try)", o.maxAttempts)
	}
	if o.maxInFlight < 1 {
		bad("MaxInFlight", "is %d: it must be at least 1", o.maxInFlight)
	}
	if o.maxPerHost < 1 || o.maxPerHost > MaxPerHostLimit {
		bad("MaxPerHost", "is %d: it must be from 1 to %d", o.maxPerHost, MaxPerHostLimit)
	}
	if o.drainPage < 1 || o.drainPage > MaxDrainPage {
		bad("DrainPage", "is %d: it must be from 1 to %d", o.drainPage, MaxDrainPage)
	}
	if o.lease < 2*time.Second {
		bad("Lease", "is %v: it must be at least 2s", o.lease)
	}
	if o.maxRetryAfter < time.Second {
		bad("MaxRetryAfter", "is %v: it must be at least 1s", o.maxRetryAfter)
	}
	if o.sweepLimit < 1 {
		bad("SweepLimit", "is %d: it must be at least 1", o.sweepLimit)
	}
	if o.schedule != nil && len(o.schedule) == 0 {
		bad("Schedule", "is empty")
	}
	for i, d := range o.schedule {
		if d < time.Second {
			bad(fmt.Sprintf("Schedule[%d]", i), "is %v: each delay must be at least 1s", d)
		}
	}
	if h := o.hostPolicy.Horizon; h < MinHostHorizon || h > MaxHostHorizon {
		bad("HostHorizon", "is %v: it must be from %v to %v", h, MinHostHorizon, MaxHostHorizon)
	}
	if o.owner == "" {
		o.owner = defaultOwner()
	} else if err := journal.ValidateID("Owner", o.owner); err != nil {
		errs = append(errs, err)
	}
	if o.logger == nil {
		o.logger = slog.Default()
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
