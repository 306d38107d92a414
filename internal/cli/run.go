package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/postgres"
)

// appendListener is implemented by stores that can signal appends made by
// other processes (store/postgres: LISTEN/NOTIFY).
type appendListener interface {
	Listen(ctx context.Context) (*postgres.Listener, error)
}

// sequencerRunner is implemented by stores that number appended records
// after their commit (store/postgres: the sequencer).
type sequencerRunner interface {
	RunSequencer(ctx context.Context, onError func(error))
}

// sequencerLogEvery bounds how often a failing sequencer is logged: it
// retries every 100 ms while the database is away.
const sequencerLogEvery = 10 * time.Second

// listenRetry is how long the daemon waits before listening again after the
// database went away: short, because until it listens again it hears no
// append and claims only every --every, which may be an hour.
const listenRetry = time.Second

func newRun(e *env) *cobra.Command {
	var (
		every                  time.Duration
		nsList                 []string
		metricsAddr, adminAddr string
		sweepLimit             int
		tf                     transportFlags
		wf                     workerFlags
		retain                 string
		pruneEvery             time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the daemon: a worker per namespace, /metrics, /healthz, the operator's page and the admin API",
		Long: `Run the daemon: one worker per namespace, each a dispatcher that keeps up to
--max-in-flight registrations being served and refills a slot as soon as its
turn ends, so a slow or silent receiver holds one slot (at most --timeout),
never the namespace. It claims at once after an append (PostgreSQL: the
sequencer, which this daemon runs, numbers appended records within
milliseconds and notifies), when turns end, and every --every.
--max-per-host caps the messages in flight to one host (host:port).
Several daemons may share one PostgreSQL database: leases keep them from
delivering the same registration at the same time.

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
404 or 500):

  GET  /v1/registrations?stream=&namespace=&parked=true&lagging=true&limit=&after_stream=&after_id=
  GET  /v1/evidence?stream=S&id=ID&limit=N
  POST /v1/unpark?stream=S&id=ID
  POST /v1/skip?stream=S&id=ID&to_seq=N&reason=…
  POST /v1/rewind?stream=S&id=ID&to_seq=N
  GET  /v1/hosts?state=&host=&after=&limit=
  POST /v1/hosts/reset?host=HOST

It requires "Authorization: Bearer $HERALD_ADMIN_TOKEN" when that variable is
set; herald refuses to serve it on a non-loopback address without a token. An
empty address turns either server off.`,
		Example: `  herald run
  herald run --database postgres://herald@db/herald --namespaces activitypub,webhook --every 2s
  HERALD_ADMIN_TOKEN=… herald run --admin-addr 10.0.0.5:9465`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if every <= 0 {
				return usagef("--every %v must be positive", every)
			}
			if sweepLimit < 1 {
				return usagef("--sweep-limit %d must be at least 1", sweepLimit)
			}
			if err := wf.check(); err != nil {
				return err
			}
			for _, ns := range nsList {
				if err := checkNamespace(ns); err != nil {
					return err
				}
			}
			keep, err := parseRetain(retain)
			if err != nil {
				return err
			}
			if pruneEvery < 0 {
				return usagef("--prune-every %v must be 0 (off) or positive", pruneEvery)
			}
			token := e.getenv("HERALD_ADMIN_TOKEN")
			if adminAddr != "" {
				if err := checkAdminAddr(adminAddr, token); err != nil {
					return err
				}
			}
			tr, err := tf.build(e)
			if err != nil {
				return err
			}
			b, err := e.open(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			pg, err := page.New(page.Options{Store: b, Token: token, Now: e.now, Logger: e.logger})
			if err != nil {
				return err
			}
			d := &daemon{e: e, b: b, every: every, page: pg}
			d.metrics = newMetrics(func(ctx context.Context) (push.Stats, error) { return b.Stats(ctx, e.now()) },
				func(ctx context.Context) ([]push.Host, error) { return allHosts(ctx, b, push.HostQuery{}) })
			if pruneEvery > 0 {
				d.pruner = &pruner{e: e, b: b, retain: keep, every: pruneEvery, passed: newPruneMetrics(d.metrics.reg).observe}
			}
			for _, ns := range slices.Compact(slices.Sorted(slices.Values(nsList))) {
				opts := append(wf.options(e), push.WithSweepLimit(sweepLimit), push.WithHooks(pg.Hooks(ns, d.metrics.hooks(ns))))
				w, err := newWorker(b, tr, ns, opts)
				if err != nil {
					return err
				}
				d.workers = append(d.workers, w)
				d.metrics.watch(w)
			}
			return d.serve(cmd.Context(), metricsAddr, adminAddr, token)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&every, "every", time.Second, "claim interval when nothing else wakes the worker")
	f.StringSliceVar(&nsList, "namespaces", namespaceNames(), "namespaces to serve, comma-separated")
	f.StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:9464", "address for /metrics and /healthz (empty: off)")
	f.StringVar(&adminAddr, "admin-addr", "127.0.0.1:9465", "address for the operator's page (/ui/) and the admin JSON API (empty: off)")
	f.IntVar(&sweepLimit, "sweep-limit", push.DefaultSweepLimit, "registrations claimed at most at once")
	f.StringVar(&retain, "retain", "7d", "keep acknowledged records this long before pruning them (see herald prune): a duration or days (7d)")
	f.DurationVar(&pruneEvery, "prune-every", time.Minute, "how often to prune, in small batches (0: never)")
	tf.add(cmd)
	wf.add(cmd)
	return cmd
}

type daemon struct {
	e       *env
	b       backend
	every   time.Duration
	workers []*push.Worker
	metrics *metrics
	pruner  *pruner // nil: no pruning
	page    *page.Page
	// ready, if set, is called with the listeners' addresses once serving.
	ready func(metrics, admin string)
}

func (d *daemon) serve(ctx context.Context, metricsAddr, adminAddr, token string) error {
	log := d.e.logger
	var servers []*http.Server
	var addrs [2]string
	listen := func(i int, addr string, h http.Handler) error {
		if addr == "" {
			return nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w (is another herald running? pick another address or pass an empty one)", addr, err)
		}
		addrs[i] = ln.Addr().String()
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("herald: http server failed", "addr", addr, "err", err)
			}
		}()
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promHandler(d.metrics))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		hctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := d.b.List(hctx, push.ListQuery{Limit: 1}); err != nil {
			http.Error(w, "store unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range servers {
			_ = s.Shutdown(sctx)
		}
	}()
	if err := listen(0, metricsAddr, mux); err != nil {
		return err
	}
	if err := listen(1, adminAddr, withPage(adminHandler(d.b, token, d.e.now), d.page)); err != nil {
		return err
	}
	names := make([]string, len(d.workers))
	for i, w := range d.workers {
		names[i] = w.Namespace()
	}
	log.Info("herald: running", "namespaces", strings.Join(names, ","), "every", d.every,
		"metrics", addrs[0], "admin", addrs[1], "owner", d.workers[0].Owner())
	if d.ready != nil {
		d.ready(addrs[0], addrs[1])
	}

	var g errgroup.Group
	for _, w := range d.workers {
		g.Go(func() error { return w.Run(ctx, d.every) })
	}
	if sq, ok := d.b.(sequencerRunner); ok {
		var last time.Time
		g.Go(func() error {
			sq.RunSequencer(ctx, func(err error) {
				if now := time.Now(); now.Sub(last) >= sequencerLogEvery {
					last = now
					log.Warn("herald: the sequencer cannot number appended records; retrying", "err", err)
				}
			})
			return nil
		})
	}
	if l, ok := d.b.(appendListener); ok {
		g.Go(func() error { d.wakeOnAppend(ctx, l); return nil })
	}
	if d.pruner != nil {
		g.Go(func() error { d.pruner.run(ctx); return nil })
	}
	if adminAddr != "" {
		g.Go(func() error { d.page.RunSampler(ctx, page.SampleEvery); return nil })
	}
	err := g.Wait()
	log.Info("herald: stopped; every cursor is saved")
	return err
}

// wakeOnAppend wakes every worker when another process appends. When the
// listening connection breaks (a database restart) it logs it once, listens
// again every listenRetry until the database answers, says so, and wakes
// every worker: appends committed while nobody listened were not heard.
func (d *daemon) wakeOnAppend(ctx context.Context, store appendListener) {
	wakeAll := func() {
		for _, w := range d.workers {
			w.Wake()
		}
	}
	failing := false
	for ctx.Err() == nil {
		l, err := store.Listen(ctx)
		if err == nil {
			if failing {
				d.e.logger.Info("herald: listening for appends again")
				failing = false
				wakeAll()
			}
			for err == nil {
				if _, err = l.Wait(ctx); err == nil {
					wakeAll()
				}
			}
			l.Close()
		}
		if ctx.Err() != nil {
			return
		}
		if !failing {
			d.e.logger.Warn("herald: cannot listen for appends; claiming on the interval only until it recovers", "err", err)
			failing = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(listenRetry, d.every)):
		}
	}
}
