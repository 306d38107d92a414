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
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/heraldpush/herald/daemon/internal/throttle"
	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultEvery is the claim interval when nothing else wakes a worker.
const DefaultEvery = time.Second

// MaxBody is the HTTP API's request body limit: 8 MiB, room for a
// batch of a few records at journal.DefaultMaxPayload (1 MiB) each, base64
// included. Larger requests get 413.
const MaxBody = 8 << 20

// Options configure a Daemon. Store, Transport and Projections are
// required; every other field has a default.
type Options struct {
	Store store.Backend
	// Transport sends the workers' messages (transport.New, or a test's).
	Transport push.Transport
	// Projections are the namespaces to serve: one worker each, in the
	// order given; two projections of one namespace are an error.
	Projections []push.Projection
	// WorkerOptions are passed to every push.NewWorker. The daemon adds
	// push.WithHooks for its metrics, replacing any Hooks given here.
	WorkerOptions []push.Option

	// Every is how often each worker claims when nothing wakes it (an
	// append, the end of a turn); default DefaultEvery.
	Every time.Duration
	// Logger receives the daemon's log (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock of operator actions, pruning and the stats that
	// /metrics reports (default time.Now).
	Now func() time.Time

	// MetricsAddr serves /metrics (Prometheus) and /healthz; empty: off.
	// On loopback /metrics answers without a token requests to a loopback
	// Host (not a name that rebinds to it, as a page could); off it, it is served with TLS
	// (as the admin address is) only to a token that may read every
	// stream: HERALD_ADMIN_TOKEN, HERALD_API_TOKEN or an unscoped stored
	// token of the reader role or above. /healthz, which says only ok or
	// not ok, stays open.
	MetricsAddr string
	// AdminAddr serves the admin API and the operator's page, APIAddr the
	// HTTP API; empty: off. Without its token each must be a loopback
	// address.
	AdminAddr, AdminToken string
	APIAddr, APIToken     string

	// Prune, if set, prunes what every registration acknowledged while the
	// daemon runs (store.Retention; herald prune explains the rules).
	Prune *Prune

	// TLSCertFile and TLSKeyFile, both or neither, are the PEM certificate
	// (chain) and key the admin and API addresses, and the metrics address
	// off loopback, serve HTTPS with.
	TLSCertFile, TLSKeyFile string
	// TLSTerminatedByProxy says the addresses are reached only through a
	// proxy that terminates TLS: they may then serve plain HTTP off
	// loopback, the client a failed authentication counts against is the
	// last address of X-Forwarded-For, and the page's cookie is Secure when
	// X-Forwarded-Proto is https.
	TLSTerminatedByProxy bool

	// Limits bound the time and connections clients may hold of the
	// three addresses; zero fields take DefaultLimits'.
	Limits Limits

	// Listeners, if set, are sockets already open on the addresses, each
	// given with its address, whose rules (token, TLS) it follows: Run
	// serves on each one given instead of listening itself (herald run
	// listens before it opens its store).
	Listeners Listeners

	// Ready, if set, is called once every listener is open, with their
	// addresses (a port 0 resolved).
	Ready func(Addrs)
}

// Listeners are a daemon's listening sockets; nil: not opened ahead.
type Listeners struct {
	Metrics, Admin, API net.Listener
}

// Close closes the listeners that are open (Run closes them too).
func (ls Listeners) Close() {
	for _, ln := range []net.Listener{ls.Metrics, ls.Admin, ls.API} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// Prune configures the daemon's pruning: a pass every Every (positive),
// of what every registration acknowledged more than Retain ago (0: at once).
type Prune struct {
	Every, Retain time.Duration
}

// Addrs are the addresses a running daemon listens on; empty when off.
type Addrs struct {
	Metrics, Admin, API string
}

// Daemon runs a worker per namespace over one store and serves its HTTP
// endpoints. Build it with New; Run it once.
type Daemon struct {
	opts    Options // with New's defaults
	store   store.Backend
	workers []*push.Worker
	served  []string // the workers' namespaces, in order
	byNS    map[string]*push.Worker
	metrics *metrics
	pruned  func(store.PruneReport, error) // told of every prune pass, when Options.Prune is set
	page    *page.Page
	// throttle counts failed authentications on every address (the
	// APIs, the page's login, /healthz's detail), per client.
	throttle *throttle.Throttle
	certs    *certFiles // the admin and API addresses' TLS; nil: off
}

// New validates opts and builds the daemon and its workers; nothing is
// opened or started. Errors name the field, or are push.NewWorker's.
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
	case p != nil && (p.Every <= 0 || p.Retain < 0):
		return bad("Options.Prune: Every %v must be positive and Retain %v not negative", p.Every, p.Retain)
	}
	if err := cmp.Or(CheckAddr("Options.AdminAddr", opts.AdminAddr, opts.AdminToken, "Options.AdminToken (HERALD_ADMIN_TOKEN)"),
		CheckAddr("Options.APIAddr", opts.APIAddr, opts.APIToken, "Options.APIToken (HERALD_API_TOKEN)"),
		CheckToken("Options.AdminToken (HERALD_ADMIN_TOKEN)", opts.AdminToken), CheckToken("Options.APIToken (HERALD_API_TOKEN)", opts.APIToken),
		opts.Limits.check()); err != nil {
		return bad("%v", err)
	}
	for _, l := range []struct {
		field, addr string
		ln          net.Listener
	}{{"MetricsAddr", opts.MetricsAddr, opts.Listeners.Metrics}, {"AdminAddr", opts.AdminAddr, opts.Listeners.Admin}, {"APIAddr", opts.APIAddr, opts.Listeners.API}} {
		if l.ln != nil && l.addr == "" {
			// Without it, a socket on every interface would be served as loopback.
			return bad("Options.Listeners has a listener for Options.%s, which is empty: give the address it listens on", l.field)
		}
	}
	certs, err := checkTLS(opts)
	if err != nil {
		return bad("%v", err)
	}
	opts.Every, opts.Logger = cmp.Or(opts.Every, DefaultEvery), cmp.Or(opts.Logger, slog.Default())
	if certs != nil {
		certs.warn = func(err error) {
			opts.Logger.Warn("herald: the TLS files changed and do not load; serving the last good pair", "err", err)
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := opts.Store
	d := &Daemon{opts: opts, store: s, byNS: map[string]*push.Worker{}, throttle: throttle.New(nil, opts.Logger), certs: certs}
	d.metrics = newMetrics(func(ctx context.Context) (store.Stats, error) { return s.Stats(ctx, opts.Now()) },
		func(ctx context.Context) ([]store.Host, error) { return store.AllHosts(ctx, s, store.HostQuery{}) })
	d.page, _ = page.New(page.Options{Store: s, Token: opts.AdminToken, Now: opts.Now, Logger: opts.Logger, Throttle: d.throttle, BehindProxy: opts.TLSTerminatedByProxy}) // its one error, a nil Store, is refused above
	if opts.Prune != nil {
		d.pruned = d.metrics.pruned()
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
		d.workers, d.served = append(d.workers, w), append(d.served, ns)
		d.byNS[ns] = w
		d.metrics.gauges.workers = append(d.metrics.gauges.workers, w)
	}
	return d, nil
}

// MetricsHandler serves the daemon's metrics in Prometheus' text format,
// to anyone; Run serves it so on a loopback MetricsAddr only.
func (d *Daemon) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{})
}

// guardedMetrics is MetricsHandler for a token operator.Access lets read
// it: the metrics count every tenant's streams and name receivers' hosts.
// open (a loopback address) also lets in a request without a token, as an
// open API does: to a loopback Host only, against DNS rebinding.
func (d *Daemon) guardedMetrics(open bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", d.MetricsHandler())
	return guard(mux, d.gate(open, operator.Static{Secret: d.opts.AdminToken, Role: store.RoleAdmin, Name: "HERALD_ADMIN_TOKEN"},
		operator.Static{Secret: d.opts.APIToken, Role: store.RoleOperator, Name: "HERALD_API_TOKEN"}), "herald metrics", "HERALD_ADMIN_TOKEN, HERALD_API_TOKEN")
}

// AdminHandler serves the admin JSON API (package doc, "The admin API").
func (d *Daemon) AdminHandler() http.Handler {
	return adminHandler(d.store, d.gate(d.opts.AdminToken == "", operator.Static{Secret: d.opts.AdminToken, Role: store.RoleAdmin, Name: "HERALD_ADMIN_TOKEN"}), d.opts.Now, d.wake)
}

// gate is an address's gate: whether it is open, the static tokens it
// takes, and the tokens of the store.
func (d *Daemon) gate(open bool, static ...operator.Static) gate {
	return gate{open: open, throttle: d.throttle, behindProxy: d.opts.TLSTerminatedByProxy,
		auth: operator.Authenticator{Store: d.store, Static: static, Now: d.opts.Now, Log: d.opts.Logger}}
}

// Page is the operator's page, which Run serves on AdminAddr under /ui/.
func (d *Daemon) Page() *page.Page { return d.page }

// Run runs the daemon until ctx ends (package doc). It returns the first
// worker error, or an address's before anything ran.
func (d *Daemon) Run(ctx context.Context) error {
	var servers []*http.Server
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // for requests in flight
		defer cancel()
		for _, s := range servers {
			_ = s.Shutdown(sctx)
		}
	}()
	metrics, offLoopback := http.NewServeMux(), NeedsTLS(d.opts.MetricsAddr)
	metrics.Handle("/metrics", d.guardedMetrics(!offLoopback))
	metrics.Handle("/healthz", d.HealthHandler()) // "ok" or "not ok", to anyone
	var addrs Addrs
	ls := d.opts.Listeners
	limits := d.opts.Limits.withDefaults()
	conns := newConnLimiter(limits)
	for _, e := range []struct {
		addr   string
		ln     net.Listener
		h      http.Handler
		served *string
		tls    bool
	}{{d.opts.MetricsAddr, ls.Metrics, metrics, &addrs.Metrics, offLoopback}, {d.opts.AdminAddr, ls.Admin, withPage(d.AdminHandler(), d.page), &addrs.Admin, true},
		{d.opts.APIAddr, ls.API, d.APIHandler(), &addrs.API, true}} {
		ln, err := e.ln, error(nil)
		if ln == nil && e.addr == "" {
			continue
		} else if ln == nil {
			if ln, err = net.Listen("tcp", e.addr); err != nil {
				return fmt.Errorf("listen on %s: %w", e.addr, err)
			}
		}
		srv := limits.server(e.h, d.opts.Logger)
		servers = append(servers, srv)
		*e.served = ln.Addr().String()
		ln = conns.wrap(ln)
		serve := srv.Serve
		if e.tls && d.certs != nil {
			srv.TLSConfig = d.certs.config()
			serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
		}
		go func() {
			if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.opts.Logger.Error("herald: http server failed", "addr", e.addr, "err", err)
			}
		}()
	}
	attrs := []any{"namespaces", strings.Join(d.served, ","), "every", d.opts.Every, "metrics", addrs.Metrics, "admin", addrs.Admin}
	if addrs.API != "" {
		attrs = append(attrs, "api", addrs.API)
	}
	d.opts.Logger.Info("herald: running", append(attrs, "owner", d.workers[0].Owner())...)
	if d.opts.Ready != nil {
		d.opts.Ready(addrs)
	}

	var g errgroup.Group
	for _, w := range d.workers {
		g.Go(func() error { return w.Run(ctx, d.opts.Every) })
	}
	if sq, ok := d.store.(sequencerRunner); ok {
		g.Go(func() error { d.runSequencer(ctx, sq); return nil })
	}
	if l, ok := d.store.(appendListener); ok {
		g.Go(func() error { d.wakeOnAppend(ctx, l); return nil })
	}
	if d.opts.Prune != nil {
		g.Go(func() error { d.prune(ctx); return nil })
	}
	if addrs.Admin != "" {
		g.Go(func() error { d.page.RunSampler(ctx); return nil })
	}
	err := g.Wait()
	d.opts.Logger.Info("herald: stopped; every cursor is saved")
	return err
}

// HealthHandler serves /healthz: "ok" when the store answers a one-row read
// within 2 s, else 503 "not ok". Why it is not ok (the store's error, which
// names the database, its user and address) is told only to a request with
// the admin token, and logged when the store stops answering.
func (d *Daemon) HealthHandler() http.Handler {
	var failing atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Cache-Control", "no-store")
		if _, err := d.store.List(ctx, store.ListQuery{Limit: 1}); err != nil {
			if !failing.Swap(true) {
				d.opts.Logger.Warn("herald: /healthz: the store does not answer", "err", err)
			}
			msg := "not ok"
			if d.opts.AdminToken != "" && bearer(r, d.opts.AdminToken) {
				msg = "not ok: store unreachable: " + err.Error()
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		if failing.Swap(false) {
			d.opts.Logger.Info("herald: /healthz: the store answers again")
		}
		_, _ = io.WriteString(w, "ok\n")
	})
}

// appendListener is a store that hears appends made by other processes
// (store/postgres: LISTEN/NOTIFY).
type appendListener interface {
	Listen(ctx context.Context) (store.Listener, error)
}

// sequencerRunner is a store that numbers appended records after their
// commit (store/postgres) and says when a step numbered some, so that the
// daemon wakes its own workers before the notification comes back.
type sequencerRunner interface {
	RunSequencerWaking(ctx context.Context, onError func(error), numbered func())
}

// wakeOnAppend wakes every worker when another process's sequencer numbers
// appended records, and each time it starts listening: appends committed
// while nobody listened were not heard. While the database is away it logs
// once and listens again every second (at most Every).
func (d *Daemon) wakeOnAppend(ctx context.Context, store appendListener) {
	failing := false
	for ctx.Err() == nil {
		l, err := store.Listen(ctx)
		if err == nil {
			if failing {
				d.opts.Logger.Info("herald: listening for appends again")
				failing = false
			}
			d.wakeAll()
			for err == nil {
				if _, err = l.Wait(ctx); err == nil {
					d.wakeAll()
				}
			}
			l.Close()
		}
		if ctx.Err() != nil {
			return
		}
		if !failing {
			d.opts.Logger.Warn("herald: cannot listen for appends; claiming on the interval only until it recovers", "err", err)
			failing = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Second, d.opts.Every)):
		}
	}
}

// wakeAll makes every worker claim at once.
func (d *Daemon) wakeAll() {
	for _, w := range d.workers {
		w.Wake()
	}
}

// runSequencer numbers appended records (store/postgres) until ctx ends,
// waking every worker after each step that numbered some. It retries every
// 100 ms while the database is away, and logs that at most every 10 s.
func (d *Daemon) runSequencer(ctx context.Context, sq sequencerRunner) {
	var last time.Time
	sq.RunSequencerWaking(ctx, func(err error) {
		if now := time.Now(); now.Sub(last) >= 10*time.Second {
			last = now
			d.opts.Logger.Warn("herald: the sequencer cannot number appended records; retrying", "err", err)
		}
	}, d.wakeAll)
}

// prune is the daemon's retention: a pass of small batches every
// Options.Prune.Every, with a pause between batches so appends and sweeps
// go first.
func (d *Daemon) prune(ctx context.Context) {
	for ctx.Err() == nil {
		rep, err := d.prunePass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			d.opts.Logger.Error("herald: prune failed; trying again at the next interval", "err", err)
		case rep.Records > 0 || rep.Removed > 0 || rep.Evidence > 0 || rep.Hosts > 0:
			d.opts.Logger.Info("herald: pruned", "records", rep.Records, "bytes", rep.Bytes, "streams", rep.Streams,
				"streams_removed", rep.Removed, "evidence", rep.Evidence, "hosts", rep.Hosts)
		}
		d.pruned(rep, err)
		select {
		case <-ctx.Done():
		case <-time.After(d.opts.Prune.Every):
		}
	}
}

// prunePass is one pass of retention, 10 ms apart between batches: enough that
// thousands of batches never keep the database busy.
func (d *Daemon) prunePass(ctx context.Context) (store.PruneReport, error) {
	return operator.Prune(ctx, d.store, store.PruneQuery{At: d.opts.Now(), Retain: d.opts.Prune.Retain}, func(int, store.PruneReport) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
			return nil
		}
	})
}
