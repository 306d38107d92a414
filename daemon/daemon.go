package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// Store is what the daemon runs on: the journal and the push store over one
// database, with host health and retention. store/memory, store/sqlite and
// store/postgres implement it.
type Store interface {
	journal.Journal
	push.Store
	store.Retention
}

// DefaultEvery is the claim interval when nothing else wakes a worker.
const DefaultEvery = time.Second

// DefaultMaxBody is the HTTP API's request body limit: 8 MiB, room for a
// batch of a few records at journal.DefaultMaxPayload (1 MiB) each, base64
// included. Larger requests get 413.
const DefaultMaxBody = 8 << 20

// shutdownTimeout bounds how long Run waits for HTTP requests in flight
// when it stops.
const shutdownTimeout = 5 * time.Second

// Options configure a Daemon. Store, Transport and Projections are
// required; every other field has a default.
type Options struct {
	// Store is the database the daemon works on.
	Store Store
	// Transport sends the workers' messages (transport.New, or a test's).
	Transport push.Transport
	// Projections are the namespaces to serve: one worker each, in the
	// order given; two projections of one namespace are an error.
	Projections []push.Projection
	// WorkerOptions are passed to every push.NewWorker. The daemon adds
	// push.WithHooks for its metrics, replacing any Hooks given here.
	WorkerOptions []push.Option

	// Every is how often each worker claims when nothing wakes it
	// (default DefaultEvery). A worker claims at once after an append made
	// through the HTTP API, or heard from the store (store/postgres), and
	// when turns end.
	Every time.Duration
	// Logger receives the daemon's log (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock of operator actions, pruning and the stats that
	// /metrics reports (default time.Now).
	Now func() time.Time

	// MetricsAddr serves /metrics (Prometheus) and /healthz; empty: off.
	MetricsAddr string
	// AdminAddr serves the admin API (AdminHandler) and the operator's
	// page under /ui/ (Daemon.Page); empty: off. Without
	// AdminToken it must be a loopback address.
	AdminAddr  string
	AdminToken string
	// APIAddr serves the HTTP API (Daemon.APIHandler); empty: off. Without
	// APIToken it must be a loopback address.
	APIAddr  string
	APIToken string
	// MaxBody bounds an HTTP API request body, in bytes (default
	// DefaultMaxBody).
	MaxBody int64

	// Prune, if set, prunes what every registration acknowledged while the
	// daemon runs (store.Retention; herald prune explains the rules).
	Prune *Prune

	// Listeners, if set, are sockets already open on MetricsAddr,
	// AdminAddr and APIAddr: Run serves on each one given instead of
	// listening itself. A program that listens before it opens its store
	// (herald run) fails on an address in use having changed nothing.
	Listeners Listeners

	// Ready, if set, is called once every listener is open, with their
	// addresses (a port 0 resolved).
	Ready func(Addrs)
}

// Listeners are a daemon's listening sockets; nil: not opened ahead.
type Listeners struct {
	Metrics, Admin, API net.Listener
}

// Close closes the listeners that are open; Run closes them itself when
// it returns, so a caller's deferred Close after Run is harmless.
func (ls Listeners) Close() {
	for _, ln := range []net.Listener{ls.Metrics, ls.Admin, ls.API} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// Prune configures the daemon's pruning.
type Prune struct {
	// Every is the interval between passes; it must be positive.
	Every time.Duration
	// Retain is how long acknowledged records are kept (0: pruned as soon
	// as every registration acknowledged them; store.DefaultRetain is 7 days).
	Retain time.Duration
}

// Addrs are the addresses a running daemon listens on; empty when off.
type Addrs struct {
	Metrics, Admin, API string
}

// Daemon runs a worker per namespace over one store and serves its HTTP
// endpoints. Build it with New; Run it once.
type Daemon struct {
	opts    Options
	store   Store
	log     *slog.Logger
	now     func() time.Time
	every   time.Duration
	workers []*push.Worker
	byNS    map[string]*push.Worker
	metrics *metrics
	pruner  *pruner // nil: no pruning
	page    *page.Page
}

// New validates opts and builds the daemon and its workers. Errors name the
// field (Options.Every, Options.APIAddr, …) or come from push.NewWorker;
// nothing is opened or started.
func New(opts Options) (*Daemon, error) {
	bad := func(format string, args ...any) (*Daemon, error) {
		return nil, fmt.Errorf("daemon: "+format, args...)
	}
	switch p := opts.Prune; {
	case opts.Store == nil:
		return bad("Options.Store is required")
	case opts.Transport == nil:
		return bad("Options.Transport is required")
	case len(opts.Projections) == 0:
		return bad("Options.Projections is empty: give at least one namespace to serve")
	case opts.Every < 0:
		return bad("Options.Every %v must be positive (0: %v)", opts.Every, DefaultEvery)
	case opts.MaxBody < 0:
		return bad("Options.MaxBody %d must be positive (0: %d bytes)", opts.MaxBody, DefaultMaxBody)
	case p != nil && (p.Every <= 0 || p.Retain < 0):
		return bad("Options.Prune: Every %v must be positive and Retain %v not negative", p.Every, p.Retain)
	}
	for _, a := range [][4]string{{"Options.AdminAddr", opts.AdminAddr, opts.AdminToken, "Options.AdminToken (HERALD_ADMIN_TOKEN)"},
		{"Options.APIAddr", opts.APIAddr, opts.APIToken, "Options.APIToken (HERALD_API_TOKEN)"}} {
		if a[1] != "" {
			if err := operator.CheckAddr(a[0], a[1], a[2], a[3]); err != nil {
				return bad("%v", err)
			}
		}
	}
	opts.Every, opts.MaxBody, opts.Logger = cmp.Or(opts.Every, DefaultEvery), cmp.Or(opts.MaxBody, DefaultMaxBody), cmp.Or(opts.Logger, slog.Default())
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := opts.Store
	d := &Daemon{opts: opts, store: s, log: opts.Logger, now: opts.Now, every: opts.Every, byNS: map[string]*push.Worker{}}
	d.metrics = newMetrics(func(ctx context.Context) (push.Stats, error) { return s.Stats(ctx, d.now()) },
		func(ctx context.Context) ([]push.Host, error) { return push.AllHosts(ctx, s, push.HostQuery{}) })
	var err error
	if d.page, err = page.New(page.Options{Store: s, Token: opts.AdminToken, Now: d.now, Logger: d.log}); err != nil {
		return nil, fmt.Errorf("daemon: the operator's page: %w", err)
	}
	if p := opts.Prune; p != nil {
		d.pruner = &pruner{log: d.log, now: d.now, b: s, retain: p.Retain, every: p.Every, passed: newPruneMetrics(d.metrics.reg).observe}
	}
	for i, p := range opts.Projections {
		if p == nil {
			return bad("Options.Projections[%d] is nil", i)
		}
		ns := p.Namespace()
		if d.byNS[ns] != nil {
			return bad("Options.Projections[%d]: namespace %q is served twice", i, ns)
		}
		wopts := append(slices.Clone(opts.WorkerOptions), push.WithHooks(d.page.Hooks(ns, d.metrics.hooks(ns))))
		w, err := push.NewWorker(s, s, opts.Transport, p, wopts...)
		if err != nil {
			return nil, fmt.Errorf("daemon: the %s worker: %w", ns, err)
		}
		d.workers = append(d.workers, w)
		d.byNS[ns] = w
		d.metrics.watch(w)
	}
	return d, nil
}

// MetricsHandler serves the daemon's metrics in Prometheus' text format.
func (d *Daemon) MetricsHandler() http.Handler { return d.metrics.handler() }

// AdminHandler serves the admin JSON API (package doc, "The admin API") on
// the daemon's store, token and clock.
func (d *Daemon) AdminHandler() http.Handler {
	return adminHandler(d.store, d.opts.AdminToken, d.now, d.wake)
}

// Page is the operator's page on the daemon's store, admin token and
// clock. Run serves it on AdminAddr under /ui/ and samples its charts.
func (d *Daemon) Page() *page.Page { return d.page }

// served are the namespaces the daemon's workers serve, in order.
func (d *Daemon) served() []string {
	names := make([]string, len(d.workers))
	for i, w := range d.workers {
		names[i] = w.Namespace()
	}
	return names
}

// Run listens on the configured addresses (or serves Options.Listeners),
// runs every worker's dispatcher, the store's sequencer and append listener
// when it has them (store/postgres) and the pruner, until ctx ends. Then it
// lets deliveries in flight finish or time out, saves every cursor, closes
// the listeners and returns nil, or the first worker error. An address that
// cannot be listened on is an error before anything ran.
func (d *Daemon) Run(ctx context.Context) error {
	var servers []*http.Server
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		for _, s := range servers {
			_ = s.Shutdown(sctx)
		}
	}()
	serve := func(addr string, ln net.Listener, h http.Handler) (string, error) {
		if ln == nil && addr == "" {
			return "", nil
		}
		if ln == nil {
			var err error
			if ln, err = net.Listen("tcp", addr); err != nil {
				return "", fmt.Errorf("listen on %s: %w", addr, err)
			}
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("herald: http server failed", "addr", addr, "err", err)
			}
		}()
		return ln.Addr().String(), nil
	}
	metrics := http.NewServeMux()
	metrics.Handle("/metrics", d.MetricsHandler())
	metrics.Handle("/healthz", d.HealthHandler())
	var addrs Addrs
	ls := d.opts.Listeners
	for _, e := range []struct {
		addr   string
		ln     net.Listener
		h      http.Handler
		served *string
	}{{d.opts.MetricsAddr, ls.Metrics, metrics, &addrs.Metrics}, {d.opts.AdminAddr, ls.Admin, withPage(d.AdminHandler(), d.page), &addrs.Admin},
		{d.opts.APIAddr, ls.API, d.APIHandler(), &addrs.API}} {
		var err error
		if *e.served, err = serve(e.addr, e.ln, e.h); err != nil {
			return err
		}
	}
	attrs := []any{"namespaces", strings.Join(d.served(), ","), "every", d.every, "metrics", addrs.Metrics, "admin", addrs.Admin}
	if addrs.API != "" {
		attrs = append(attrs, "api", addrs.API)
	}
	d.log.Info("herald: running", append(attrs, "owner", d.workers[0].Owner())...)
	if d.opts.Ready != nil {
		d.opts.Ready(addrs)
	}

	var g errgroup.Group
	for _, w := range d.workers {
		g.Go(func() error { return w.Run(ctx, d.every) })
	}
	if sq, ok := d.store.(sequencerRunner); ok {
		g.Go(func() error { d.runSequencer(ctx, sq); return nil })
	}
	if l, ok := d.store.(appendListener); ok {
		g.Go(func() error { d.wakeOnAppend(ctx, l); return nil })
	}
	if d.pruner != nil {
		g.Go(func() error { d.pruner.run(ctx); return nil })
	}
	if addrs.Admin != "" {
		g.Go(func() error { d.page.RunSampler(ctx); return nil })
	}
	err := g.Wait()
	d.log.Info("herald: stopped; every cursor is saved")
	return err
}

// HealthHandler serves /healthz: 200 "ok" when the store answers a one-row
// read within 2 s, else 503 with the store's error, as text.
func (d *Daemon) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := d.store.List(ctx, push.ListQuery{Limit: 1}); err != nil {
			http.Error(w, "store unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
}
