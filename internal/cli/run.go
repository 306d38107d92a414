package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/daemon"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/otelenv"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/postgres"
)

func newRun(e *env) *cobra.Command {
	var (
		nsList                   []string
		retain                   string
		sweepLimit               int
		every, pruneEvery, seqIv time.Duration
		df                       deliveryFlags
		opts                     daemon.Options
	)
	return e.cobra(command{
		use:   "run",
		short: "Run the daemon: a worker per namespace, /metrics, /healthz, the operator's page and the admin API",
		long: `Run the daemon: one worker per namespace, each a dispatcher that keeps up to
--max-in-flight registrations being served and refills a slot as soon as its
turn ends, so a slow or silent receiver holds one slot (at most --timeout),
never the namespace. It claims at once after an append (PostgreSQL: the
sequencer, which this daemon runs, numbers appended records within
milliseconds and notifies), when turns end, and every --every.
--max-per-host caps the messages in flight to one host (host:port).
Several daemons may share one PostgreSQL database: leases keep them from
delivering the same registration at the same time.

The network guard (--allow-http, --allow-private-network, --allow-host) is
this process's: a URL it refuses parks the registration, even if another
herald run or sweep on the database, started with other flags, delivers to
it. Give every process that works a database the same guard flags, and
restart with them before an unpark --all.

Every --prune-every it prunes what every registration acknowledged once older
than --retain, in small batches (herald prune explains the rules).

On SIGINT or SIGTERM it stops starting new records, lets deliveries in flight
finish or time out, saves every cursor, and exits 0: nothing acknowledged is
lost and nothing unacknowledged is advanced.

--metrics-addr serves Prometheus metrics on /metrics and a health check on
/healthz. --admin-addr serves the operator's page on /ui/ (a login form takes
HERALD_ADMIN_TOKEN when set; README, "The operator's page") and the admin JSON
API, whose parameters are query
parameters and whose answers are JSON (errors: {"error": "…"} with 400, 401,
403, 404, 405 or 500):

  GET  /v1/registrations?stream=&namespace=&parked=true&lagging=true&limit=&after_stream=&after_id=
  GET  /v1/evidence?stream=S&id=ID&limit=N
  POST /v1/registration/unpark?stream=S&id=ID
  POST /v1/registrations/unpark?stream=S&namespace=NS   (both optional: every parked one, as unpark --all)
  POST /v1/registration/skip?stream=S&id=ID&to_seq=N&reason=…
  POST /v1/registration/rewind?stream=S&id=ID&to_seq=N
  GET  /v1/hosts?state=&host=&after=&limit=
  POST /v1/hosts/reset?host=HOST

It requires "Authorization: Bearer $HERALD_ADMIN_TOKEN" when that variable is
set; herald refuses to serve it on a non-loopback address without a token,
and, open, answers 403 to a request whose Host is not a loopback name and to
a browser's POST or DELETE from another origin.

--api-addr (off by default) serves the HTTP API for producers and operators
in any language: POST /v1/records appends, /v1/registrations registers, lists
and deletes, /v1/registration/unpark and /v1/registrations/unpark unpark one
or all, GET /v1/records/status says who acknowledged a record; its
OpenAPI 3.1 document is GET /v1/openapi.json. It requires "Authorization:
Bearer $HERALD_API_TOKEN" when that variable is set, under the same loopback
rule. An empty address turns any of these servers off. A default address that
another process holds (a second herald run on this machine) is left off with
a warning, and the daemon delivers without it; an address you name must open.

Traces: spans are exported by OTLP over HTTP when the standard environment
asks (OTEL_TRACES_EXPORTER=otlp, or OTEL_EXPORTER_OTLP_ENDPOINT set), and not
otherwise; README, "One trace from the append to the receiver".`,
		example: `  herald run
  herald run --database postgres://herald@db/herald --namespaces activitypub,webhook --every 2s
  HERALD_ADMIN_TOKEN=… herald run --admin-addr 10.0.0.5:9465
  HERALD_API_TOKEN=… herald run --api-addr 10.0.0.5:9466`,
		db: existingDB,
		flags: func(f *pflag.FlagSet) {
			f.DurationVar(&every, "every", time.Second, "claim interval when nothing else wakes the worker")
			f.StringSliceVar(&nsList, "namespaces", namespaceNames(), "namespaces to serve, comma-separated")
			f.StringVar(&opts.MetricsAddr, "metrics-addr", "127.0.0.1:9464", "address for /metrics and /healthz (empty: off)")
			f.StringVar(&opts.AdminAddr, "admin-addr", "127.0.0.1:9465", "address for the operator's page (/ui/) and the admin JSON API (empty: off)")
			f.StringVar(&opts.APIAddr, "api-addr", "", "address for the HTTP API: records, registrations, record status (empty: off)")
			libIntVar(f, &sweepLimit, "sweep-limit", push.DefaultSweepLimit, "registrations claimed at most at once", "at least 1")
			f.StringVar(&retain, "retain", "7d", "keep acknowledged records this long before pruning them (see herald prune): a duration or days (7d)")
			f.DurationVar(&pruneEvery, "prune-every", time.Minute, "how often to prune, in small batches (0: never)")
			f.DurationVar(&seqIv, "sequencer-interval", postgres.DefaultSequencerInterval,
				"PostgreSQL: the longest a committed record waits for its seq while records keep coming (shorter: more, smaller sequencer steps, each a commit)")
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
			for _, a := range []struct{ flag, addr, token, env string }{
				{"--admin-addr", opts.AdminAddr, opts.AdminToken, "HERALD_ADMIN_TOKEN"}, {"--api-addr", opts.APIAddr, opts.APIToken, "HERALD_API_TOKEN"},
			} {
				if a.addr != "" {
					if err := operator.CheckAddr(a.flag, a.addr, a.token, a.env); err != nil {
						return usageError{err}
					}
				}
			}
			if opts.Transport, opts.WorkerOptions, err = df.build(e, push.WithSweepLimit(sweepLimit)); err != nil {
				return err
			}
			// Spans go to OpenTelemetry's global provider; OTLP export when
			// the standard OTEL_* environment asks (internal/otelenv).
			otlp, stopTracing, err := otelenv.Setup(c.ctx(), e.getenv)
			if err != nil {
				return usageError{err}
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
			opts.Every, opts.Logger, opts.Now = every, e.logger, e.now
			for _, ns := range slices.Compact(slices.Sorted(slices.Values(nsList))) {
				opts.Projections = append(opts.Projections, namespaces[ns].projection())
			}
			c.onExit(func() { opts.Listeners.Close() })
			return listen(c, &opts)
		},
		run: func(c *call) error {
			opts.Store = c.b
			d, err := daemon.New(opts)
			if err != nil {
				return usageError{err}
			}
			return d.Run(c.ctx())
		},
	})
}

// listen opens the daemon's addresses before the store is opened, so that
// an address in use fails having created and migrated nothing. A default
// address that is taken (another herald run on this machine) is left off
// with a warning; only an address the operator named must open.
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
			return fmt.Errorf("--%s %s: %w (another herald run on this machine? name a free address, or an empty one to serve none)", l.flag, *l.addr, err)
		}
	}
	return nil
}
