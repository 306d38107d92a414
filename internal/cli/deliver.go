package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/daemon"
	"github.com/heraldpush/herald/internal/demo"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/otelenv"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/transport"
)

// deliveryFlags are the transport's and the workers' options of sweep and
// run; transport.New and push.NewWorker check their ranges.
type deliveryFlags struct {
	allowHTTP, allowPrivate                                  bool
	allowHosts                                               []string
	egressProxy                                              string
	timeout, maxRetryAfter, lease, hostHorizon               time.Duration
	maxAttempts, maxInFlight, maxSlow, maxPerHost, drainPage int
	pageBytes                                                int
	retrySchedule                                            string
}

func (d *deliveryFlags) add(f *pflag.FlagSet) {
	f.BoolVar(&d.allowHTTP, "allow-http", false, "allow plain http:// URLs (off: https only)")
	f.BoolVar(&d.allowPrivate, "allow-private-network", false, "allow loopback and private addresses (off: they are refused at connect time, against SSRF)")
	f.StringArrayVar(&d.allowHosts, "allow-host", nil, "only deliver to this host or *.suffix (repeatable; default: any public host)")
	f.StringVar(&d.egressProxy, "egress-proxy", "", "send every request through this HTTP CONNECT proxy, http://[user:password@]host:port, for static egress addresses; "+
		"destinations are still checked (and the proxy asked for the checked address), the proxy itself is not (a registration's --proxy replaces it)")
	f.DurationVar(&d.timeout, "timeout", transport.DefaultTimeout, fmt.Sprintf("per-request timeout, covering connect, TLS, headers and body (0: %v)", transport.DefaultTimeout))
	intVar(f, &d.maxAttempts, "max-attempts", 0, "park a registration without its own ceiling (herald register --max-attempts, --retry-for) on the failure that makes its attempts at one record reach this (default: its namespace's ceiling, README \"Retry policy\")", "at least 1", 1, 0)
	intVar(f, &d.maxInFlight, "max-in-flight", push.DefaultMaxInFlight, fmt.Sprintf("registrations served at once whose receivers answer within %v", push.SlowAfter), "at least 1", 0, 0)
	intVar(f, &d.maxSlow, "max-slow", push.DefaultMaxSlow,
		fmt.Sprintf("registrations served at once, beside --max-in-flight, whose message has waited %v for its answer: a slow receiver gives its slot to the others; past this many, a slow turn ends after its message when others wait (0: it keeps its slot until its answer)", push.SlowAfter),
		"0 or more", 0, 0)
	intVar(f, &d.maxPerHost, "max-per-host", push.DefaultMaxPerHost,
		fmt.Sprintf("messages in flight to one host (host:port), 1 to %d: a silent host holds no more slots, and small servers are not flooded", push.MaxPerHostLimit),
		fmt.Sprintf("from 1 to %d", push.MaxPerHostLimit), 0, 0)
	intVar(f, &d.drainPage, "drain-page", push.DefaultDrainPage, "records a turn sends between two cursor writes (the bound on duplicates after a crash)", fmt.Sprintf("from 1 to %d", push.MaxDrainPage), 0, 0)
	intVar(f, &d.pageBytes, "page-bytes", push.DefaultPageBytes, "payload bytes a turn reads at once (a larger record is read alone): with --max-in-flight, the bound on the payloads turns hold", fmt.Sprintf("from 1 to %d", push.MaxPageBytes), 0, 0)
	f.StringVar(&d.retrySchedule, "retry-schedule", "", "fixed delays between attempts (5s,5m,30m,2h) for a registration without its own schedule (herald register --retry-schedule) (default: its namespace's, README \"Retry policy\")")
	f.DurationVar(&d.maxRetryAfter, "max-retry-after", push.DefaultMaxRetryAfter, "cap on a receiver's Retry-After")
	f.DurationVar(&d.lease, "lease", push.DefaultLease, fmt.Sprintf("how long a claimed registration is hidden from other workers, 2s to %s; renewed every third of it while its turn runs, so it bounds how long a killed daemon's registrations wait", store.FormatDays(push.MaxLease)))
	f.DurationVar(&d.hostHorizon, "host-horizon", store.DefaultHostHorizon, "how long a host may be down before it is unavailable (probed hourly), 1h to 8760h")
}

// build returns the transport, remembering each host's signature scheme in
// schemes (nil: by itself), and the worker options, refusing what the
// libraries refuse as usage errors (a worker on an empty memory store asks).
// A command builds them once to check its flags, before it opens the store,
// and again with the store's host rows as schemes.
func (d *deliveryFlags) build(e *env, schemes transport.SchemeMemory, more ...push.Option) (*transport.HTTP, []push.Option, error) {
	if d.egressProxy != "" {
		if _, err := transport.ParseProxy("--egress-proxy", d.egressProxy); err != nil {
			return nil, nil, usageOf(err)
		}
	}
	tr, err := transport.New(transport.Options{Timeout: d.timeout, AllowHTTP: d.allowHTTP, AllowPrivateNetwork: d.allowPrivate,
		AllowHosts: d.allowHosts, Proxy: d.egressProxy, Logger: e.logger, Schemes: schemes,
		// As many idle connections per host as the worker may have in
		// flight to it, so that none is closed only for want of room.
		MaxIdleConnsPerHost: min(max(transport.DefaultMaxIdleConnsPerHost, d.maxPerHost), transport.MaxIdleConnsPerHostLimit)})
	if err != nil {
		return nil, nil, usageOf(unwrapped(err)) // past "transport: new: ", which names nothing typed
	}
	opts := append([]push.Option{push.WithMaxInFlight(d.maxInFlight), push.WithMaxSlow(d.maxSlow), push.WithMaxPerHost(d.maxPerHost),
		push.WithDrainPage(d.drainPage), push.WithPageBytes(d.pageBytes), push.WithMaxRetryAfter(d.maxRetryAfter), push.WithLease(d.lease),
		push.WithHostHorizon(d.hostHorizon), push.WithLogger(e.logger)}, more...)
	if d.maxAttempts > 0 {
		opts = append(opts, push.WithMaxAttempts(d.maxAttempts))
	}
	if d.retrySchedule != "" {
		s, err := store.ParseSchedule("retry-schedule", d.retrySchedule)
		if err == nil {
			err = push.RetryPolicy{Schedule: s}.Validate()
		}
		if err != nil {
			return nil, nil, usageOf(err)
		}
		opts = append(opts, push.WithSchedule(s))
	}
	probe := memory.New()
	if _, err := push.NewWorker(probe, probe, tr, namespaces[namespaceNames()[0]].projection(nil), opts...); err != nil {
		return nil, nil, asRangeError(usageOf(unwrapped(err)))
	}
	return tr, opts, nil
}

// unwrapped is err past the wrapping a library adds ("push: new worker: ").
func unwrapped(err error) error {
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}

func newSweep(e *env) command {
	var (
		ns    string
		at    instant
		limit int
		df    deliveryFlags
	)
	return command{
		use:   "sweep",
		short: "Run one sweep of a namespace at a given instant, and print its report (scheduler mode)",
		long: `Run one sweep (RunOnce) of a namespace: claim up to --limit due registrations,
deliver their records, and print the report. --at is the sweep's instant
(default now): it decides what is due, backoff, lease expiry and signature
dates. Run it from cron, a Kubernetes CronJob or a test.

The network guard (--allow-http, --allow-private-network, --allow-host) is this
process's: a URL it refuses parks the registration. Give every process that
sweeps a database the same guard flags.

Exit 3 when the report needs attention (herald --help): sweep again soon, or
see to the parked registrations. A host that failed at host level is named in
the report with what herald does next; its registrations wait for it, nothing
parks, and it is no cause for exit 3 (herald hosts).`,
		example: `  herald sweep --namespace webhook
  herald sweep --namespace activitypub --at 2026-03-15T11:00:00Z --limit 500 --json
  herald sweep --namespace a2a --at 1773572400`,
		need: []string{"namespace"},
		db:   existingDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&ns, "namespace", "", "the namespace to sweep: "+strings.Join(namespaceNames(), ", ")+" (required)")
			f.Var(&at, "at", "the sweep's instant: RFC 3339 (2026-03-15T11:00:00Z) or unix seconds (default now)")
			intVar(f, &limit, "limit", push.DefaultSweepLimit, "claim at most this many registrations", "at least 1", 1, 0)
			df.add(f)
		},
		check: func(c *call) (err error) {
			if err := checkNamespace(ns); err != nil {
				return err
			}
			_, _, err = df.build(e, nil)
			return err
		},
		run: func(c *call) error {
			tr, opts, err := df.build(e, c.b)
			if err != nil {
				return err
			}
			wk, err := push.NewWorker(c.b, c.b, tr, namespaces[ns].projection(c.b), opts...)
			if err != nil {
				return err
			}
			at := c.at(at)
			r, err := wk.RunOnce(c.ctx(), at, limit)
			failed := []store.Host{}
			if r.HostFailures > 0 {
				var ferr error
				if failed, ferr = failedHosts(c.ctx(), c.b, at); ferr != nil && err == nil {
					err = ferr
				}
			}
			view := struct {
				Namespace string    `json:"namespace"`
				At        time.Time `json:"at"`
				push.SweepReport
				FailedHosts    []store.Host `json:"failed_hosts"` // a host-level failure at this sweep's instant, as stored after it
				NeedsAttention bool         `json:"needs_attention"`
			}{ns, at, r, failed, r.NeedsAttention()}
			perr := c.print(view, func(w io.Writer) {
				fmt.Fprintf(w, "Sweep of %s at %s: %s, %s acknowledged, %s, %s, %d parked, %d skipped, %d completed.\n",
					ns, at.UTC().Format(time.RFC3339), plural(r.Registrations, "registration"), plural(r.Records, "record"),
					plural(r.Deliveries, "delivery"), plural(r.Retries, "retry"), r.Parked, r.Skipped, r.Completed)
				if r.Resends > 0 {
					fmt.Fprintf(w, "%s resent out of band (herald evidence has each answer).\n", plural(r.Resends, "record"))
				}
				if r.Unserved > 0 {
					fmt.Fprintf(w, "%s of other namespaces due (not served by this sweep).\n", plural(r.Unserved, "registration"))
				}
				if r.Errors > 0 {
					fmt.Fprintf(w, "%s ended on a store error (not counted against their receivers).\n", plural(r.Errors, "turn"))
				}
				if r.HostFailures > 0 {
					fmt.Fprintf(w, "%s ended on a host-level failure: no attempt charged, nothing parked; the host backs off (see herald hosts).\n", plural(r.HostFailures, "turn"))
				}
				for _, h := range failed {
					if h.State == store.HostUp {
						fmt.Fprintf(w, "Host %s failed (%d in a row; down after %d): its registrations retry with backoff. Last error: %s\n",
							tbl.Cell(h.Host), h.Failures, store.HostDownAfter, tbl.Cell(h.LastError))
					} else {
						fmt.Fprintf(w, "Host %s is %s since %s (%d failures in a row): its registrations are held, not charged; next probe at %s. Last error: %s\n",
							tbl.Cell(h.Host), h.State, operator.Instant(h.Since), h.Failures, operator.Instant(h.NextProbeAt), tbl.Cell(h.LastError))
					}
				}
				if r.Saturated {
					fmt.Fprintln(w, "Saturated: more registrations (or resends) were due than --limit; sweep again soon.")
				}
				if r.Backlog > 0 {
					fmt.Fprintf(w, "%s records left to send (a turn gave its slot up, or its budget ran out): sweep again soon.\n", plural(r.Backlog, "registration has", "registrations have"))
				}
				if r.Paced > 0 {
					fmt.Fprintf(w, "%s records their --rate holds until its next burst (NEXT ATTEMPT in herald registrations): sweep again then.\n", plural(r.Paced, "registration has", "registrations have"))
				}
				if r.Parked > 0 {
					fmt.Fprintln(w, "Registrations were parked: see herald registrations --parked, then herald unpark.")
				}
			})
			if err == nil {
				err = perr
			}
			if err == nil && r.NeedsAttention() {
				return &exitError{code: ExitAttention}
			}
			return err
		},
	}
}

// failedHosts lists the hosts whose last host-level failure is at or after
// the sweep's instant (to the microsecond, as stores keep it).
func failedHosts(ctx context.Context, hs store.HostStore, at time.Time) ([]store.Host, error) {
	all, err := store.AllHosts(ctx, hs, store.HostQuery{})
	if err != nil {
		return []store.Host{}, err
	}
	from := at.Truncate(time.Microsecond)
	out := []store.Host{}
	for _, h := range all {
		if h.Failures > 0 && !h.LastFailureAt.Before(from) {
			out = append(out, h)
		}
	}
	return out, nil
}

func newRun(e *env) command {
	var (
		nsList                   []string
		retain                   string
		sweepLimit               int
		every, pruneEvery, seqIv time.Duration
		df                       deliveryFlags
		opts                     daemon.Options
	)
	return command{
		use:   "run",
		short: "Run the daemon: a worker per namespace, /metrics, /healthz, the operator's page and the admin API",
		long: `Run the daemon: one worker per namespace, each a dispatcher that keeps up to
--max-in-flight registrations being served; a message unanswered after 1s moves
its turn to --max-slow, so a slow or silent receiver never holds a healthy
one's slot, and --max-per-host caps each host. It claims at once after an
append (PostgreSQL: the sequencer, which it runs, numbers appended records and
notifies), when turns end, and every --every. Daemons sharing a PostgreSQL
database never deliver one registration at the same time.

The network guard (--allow-http, --allow-private-network, --allow-host) is
this process's: a URL it refuses parks the registration. Give every process
that works a database the same guard flags, and restart with them before an
unpark --all.

On SIGINT or SIGTERM it lets deliveries in flight finish or time out, saves
every cursor and exits 0.

Each API requires "Authorization: Bearer $HERALD_ADMIN_TOKEN" (HERALD_API_TOKEN)
when that is set, or a token of herald tokens create, whose role and scope
limit what it may do; a static token must be random, of at least 128 bits
(make one with openssl rand -hex 32). After 10 failed authentications an address is answered
429 for a while (one try every 6 s), and each failure is logged. Off loopback
an API needs its token and TLS: --tls-cert and --tls-key, or
--tls-terminated-by-proxy when only a proxy that terminates TLS reaches it.
/metrics off loopback needs TLS the same way, and a token that may read
every stream: either static token, or an unscoped one of herald tokens
create --role reader (Prometheus: authorization: credentials). /healthz,
open, says ok or not ok; why, only with the admin token. A default address
that another process holds is left off with a warning. README has the page
("The operator's page"), the admin routes ("The command and the operator's
guide") and the limits on connections and time ("Security"); GET
/v1/openapi.json describes the HTTP API.

Traces are exported by OTLP when the standard OTEL_* environment asks
(README, "One trace from the append to the receiver").`,
		example: `  herald run
  herald run --database postgres://herald@db/herald --namespaces activitypub,webhook --every 2s
  HERALD_ADMIN_TOKEN=$(openssl rand -hex 32) herald run --admin-addr 10.0.0.5:9465 --tls-cert herald.crt --tls-key herald.key
  HERALD_API_TOKEN=… herald run --api-addr 127.0.0.1:9466   # a proxy serves it as https://herald.example/
  HERALD_API_TOKEN=… herald run --api-addr 10.0.0.5:9466 --tls-terminated-by-proxy`,
		db: existingDB,
		flags: func(f *pflag.FlagSet) {
			f.DurationVar(&every, "every", time.Second, "claim interval when nothing else wakes the worker")
			f.StringSliceVar(&nsList, "namespaces", namespaceNames(), "namespaces to serve, comma-separated")
			f.StringVar(&opts.MetricsAddr, "metrics-addr", "127.0.0.1:9464", "address for /metrics and /healthz (empty: off); off loopback /metrics needs a reader token and TLS")
			f.StringVar(&opts.AdminAddr, "admin-addr", "127.0.0.1:9465", "address for the operator's page (/ui/) and the admin JSON API (empty: off)")
			f.StringVar(&opts.APIAddr, "api-addr", "", "address for the HTTP API: records, registrations, record status (empty: off)")
			f.StringVar(&opts.TLSCertFile, "tls-cert", "", "PEM certificate (chain) the admin and API addresses, and the metrics address off loopback, serve HTTPS with; read again when the file changes")
			f.StringVar(&opts.TLSKeyFile, "tls-key", "", "PEM private key of --tls-cert")
			f.BoolVar(&opts.TLSTerminatedByProxy, "tls-terminated-by-proxy", false,
				"the addresses are reached only through a proxy that terminates TLS: serve them in plain HTTP off loopback, "+
					"count failed logins against the last X-Forwarded-For address, and mark the page's cookie Secure when X-Forwarded-Proto is https")
			intVar(f, &sweepLimit, "sweep-limit", push.DefaultSweepLimit, "registrations claimed at most at once", "at least 1", 0, 0)
			f.StringVar(&retain, "retain", "7d", retainHelp)
			f.DurationVar(&pruneEvery, "prune-every", time.Minute, "how often to prune, in small batches (0: never)")
			f.DurationVar(&seqIv, "sequencer-interval", postgres.DefaultSequencerInterval,
				fmt.Sprintf("PostgreSQL: the longest a committed record waits for its seq while records keep coming (shorter: more, smaller sequencer steps, each a commit), %v to %v",
					postgres.MinSequencerInterval, postgres.MaxSequencerInterval))
			df.add(f)
		},
		check: func(c *call) (err error) {
			if every <= 0 {
				return usagef("--every %v must be positive", every)
			}
			for _, ns := range nsList {
				if err := checkNamespace(ns); err != nil {
					return err
				}
			}
			keep, err := parseRetain(retain)
			switch {
			case err != nil:
				return err
			case pruneEvery < 0:
				return usagef("--prune-every %v must be 0 (off) or positive", pruneEvery)
			case pruneEvery > 0:
				opts.Prune = &daemon.Prune{Every: pruneEvery, Retain: keep}
			}
			if seqIv < postgres.MinSequencerInterval || seqIv > postgres.MaxSequencerInterval {
				return usagef("--sequencer-interval %v must be from %v to %v", seqIv, postgres.MinSequencerInterval, postgres.MaxSequencerInterval)
			}
			e.seqEvery = seqIv
			opts.AdminToken, opts.APIToken = e.getenv("HERALD_ADMIN_TOKEN"), e.getenv("HERALD_API_TOKEN")
			if err := cmp.Or(daemon.CheckAddr("--admin-addr", opts.AdminAddr, opts.AdminToken, "HERALD_ADMIN_TOKEN"),
				daemon.CheckAddr("--api-addr", opts.APIAddr, opts.APIToken, "HERALD_API_TOKEN"),
				daemon.CheckToken("HERALD_ADMIN_TOKEN", opts.AdminToken), daemon.CheckToken("HERALD_API_TOKEN", opts.APIToken),
				checkTLSFlags(opts)); err != nil {
				return usageOf(err)
			}
			if _, _, err = df.build(e, nil, push.WithSweepLimit(sweepLimit)); err != nil {
				return err
			}
			otlp, stopTracing, err := otelenv.Setup(c.ctx(), e.getenv)
			if err != nil {
				return usageOf(err)
			}
			c.onExit(func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx()), 5*time.Second)
				defer cancel()
				if err := stopTracing(ctx); err != nil {
					e.logger.Warn("flushing traces at exit", "err", err)
				}
			})
			if otlp.Enabled {
				e.logger.Info("exporting traces by OTLP", "because", otlp.Why)
			}
			opts.Every, opts.Logger, opts.Now = every, e.logger, time.Now
			c.onExit(func() { opts.Listeners.Close() })
			return listen(c, &opts)
		},
		run: func(c *call) error {
			var err error
			if opts.Transport, opts.WorkerOptions, err = df.build(e, c.b, push.WithSweepLimit(sweepLimit)); err != nil {
				return err
			}
			opts.Store = c.b
			for _, ns := range slices.Compact(slices.Sorted(slices.Values(nsList))) { // with the store: its held keys
				opts.Projections = append(opts.Projections, namespaces[ns].projection(c.b))
			}
			d, err := daemon.New(opts)
			if err != nil {
				return usageOf(err)
			}
			return d.Run(c.ctx())
		},
	}
}

// checkTLSFlags refuses --tls-cert without --tls-key and the reverse, and
// a pair that does not load, and an address off loopback served in clear
// (daemon.NeedsTLS).
func checkTLSFlags(opts daemon.Options) error {
	if (opts.TLSCertFile == "") != (opts.TLSKeyFile == "") {
		return callf("--tls-cert and --tls-key go together: give both or neither")
	}
	if opts.TLSCertFile != "" {
		if err := daemon.LoadTLS(opts.TLSCertFile, opts.TLSKeyFile); err != nil {
			return fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		return nil
	}
	if opts.TLSTerminatedByProxy {
		return nil
	}
	for _, a := range []struct{ flag, addr string }{{"--metrics-addr", opts.MetricsAddr}, {"--admin-addr", opts.AdminAddr}, {"--api-addr", opts.APIAddr}} {
		if daemon.NeedsTLS(a.addr) {
			return fmt.Errorf("%s %s is not a loopback address: tokens and cookies would cross the network in clear; give --tls-cert and --tls-key, "+
				"or --tls-terminated-by-proxy if only a proxy that terminates TLS reaches it", a.flag, journal.Shown(a.addr))
		}
	}
	return nil
}

// listen opens the daemon's addresses before the store, so that an address
// in use fails having created nothing; a default one taken is left off.
func listen(c *call, opts *daemon.Options) error {
	for _, l := range []struct {
		flag string
		addr *string
		ln   *net.Listener
	}{{"metrics-addr", &opts.MetricsAddr, &opts.Listeners.Metrics}, {"admin-addr", &opts.AdminAddr, &opts.Listeners.Admin},
		{"api-addr", &opts.APIAddr, &opts.Listeners.API}} {
		if *l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", *l.addr)
		switch {
		case err == nil:
			*l.ln = ln
		case errors.Is(err, syscall.EADDRINUSE) && !c.changed(l.flag):
			c.logger.Warn("herald: the default --"+l.flag+" is in use (another herald run on this machine?); serving without it: name a free address to serve it",
				"addr", *l.addr)
			*l.addr = ""
		default:
			if ae := (*net.AddrError)(nil); errors.As(err, &ae) {
				err = errors.New(ae.Err) // without its copy of the address, of any length
			} else if de := (*net.DNSError)(nil); errors.As(err, &de) {
				err = errors.New("lookup: " + de.Err)
			}
			return fmt.Errorf("--%s %s: %w (another herald run on this machine? name a free address, or an empty one to serve none)", l.flag, journal.Shown(*l.addr), err)
		}
	}
	return nil
}

func newDemo(e *env) command {
	var (
		duration time.Duration
		corpus   string
		in       *demo.Input
	)
	return command{
		use:   "demo",
		short: "Show herald's whole job on this machine: local receivers, every wire, a 503, a 410, a recovery",
		long: `Show herald's whole job in one command, with no server to install: receivers on
loopback that verify what they get with real libraries' receiving side
(ActivityPub HTTP signatures, CloudEvents, A2A, Standard Webhooks), one that
answers 503 with Retry-After a few times, one that answers 410 Gone and one that
is down; records of every wire; a worker per namespace until everything is
delivered or parked; then an unpark, and the receiver that came back catching up.

The input is an embedded example set, or with --corpus a directory laid out as
the repository's testdata/corpus. The database is a fresh SQLite file, removed
at the end, unless --database names one (it must be empty: the demo's workers
would deliver its other registrations too); HERALD_DATABASE_URL is not used.

Exit 0 when every receiver verified everything it was sent and the 410
receiver's registration is parked with its cursor intact; 1 otherwise.`,
		example: `  herald demo
  herald demo --corpus testdata/corpus
  herald demo --json --database sqlite:demo.db`,
		flags: func(f *pflag.FlagSet) {
			f.DurationVar(&duration, "duration", demo.DefaultDuration, "give up (and exit 1) when the demo has not finished in this time")
			f.StringVar(&corpus, "corpus", "", "deliver this directory (laid out as testdata/corpus) instead of the embedded examples")
		},
		check: func(*call) (err error) {
			if duration <= 0 {
				return usagef("--duration %v must be positive", duration)
			}
			if corpus == "" {
				in, err = demo.Examples()
				return err
			}
			if in, err = demo.Corpus(corpus); err != nil {
				return usageOf(err)
			}
			return nil
		},
		run: func(c *call) error {
			shown := "a fresh SQLite database (removed at the end)"
			if c.changed("database") {
				d, err := parseDatabase(e.databaseFrom, e.database)
				if err != nil {
					return err
				}
				shown = "the database " + journal.Shown(d.String())
			} else {
				dir, err := os.MkdirTemp("", "herald-demo-")
				if err != nil {
					return fmt.Errorf("create a temporary directory for the demo's database: %w", err)
				}
				defer os.RemoveAll(dir)
				e.database = "sqlite:" + filepath.Join(dir, "herald.db")
			}
			b, err := e.openDemo(c.ctx())
			if err != nil {
				return err
			}
			defer b.Close()
			logger := slog.New(slog.DiscardHandler)
			if e.verbose {
				logger = e.logger
			}
			tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: 10 * time.Second, Logger: logger})
			if err != nil {
				return err
			}
			defer tr.CloseIdleConnections()
			cfg := demo.Config{Journal: b, Store: b, Transport: tr, Input: in, Database: shown, Duration: duration,
				Out: e.Out, Progress: e.Err, Logger: logger,
				ShowRegistrations: func(w io.Writer, sts []store.Status) error {
					ew := &errWriter{w: w}
					printRegistrations(ew, operator.Held(nil).Views(sts))
					return ew.err
				}}
			if e.json {
				cfg.Out, cfg.Progress = io.Discard, nil
			}
			sum, err := demo.Run(c.ctx(), cfg)
			if errors.Is(err, demo.ErrNotEmpty) {
				return usageOf(err) // a --database in use: a bad value, nothing changed
			}
			if err != nil {
				return err
			}
			if e.json {
				if err := printJSON(e.Out, sum); err != nil {
					return err
				}
			}
			if !sum.OK {
				return &exitError{code: ExitError, err: fmt.Errorf("demo failed: %s", strings.Join(sum.Failures, "; "))}
			}
			return nil
		},
	}
}

// openDemo opens the demo's database, migrating a PostgreSQL database with
// no herald schema (an older schema is left to herald migrate up).
func (e *env) openDemo(ctx context.Context) (backend, error) {
	b, err := e.open(ctx, createDB)
	if err == nil || !errors.Is(err, store.ErrSchemaBehind) {
		return b, err
	}
	d, perr := parseDatabase(e.databaseFrom, e.database)
	if perr != nil || d.kind != "postgres" {
		return nil, err
	}
	st, serr := migrate(ctx, d, "status")
	if serr != nil || st.Current != 0 {
		return nil, err
	}
	if _, merr := migrate(ctx, d, "up"); merr != nil {
		return nil, fmt.Errorf("migrate up %s for the demo: %w", d, merr)
	}
	return e.open(ctx, createDB)
}
