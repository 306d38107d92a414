package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/heraldpush/herald/bench/internal/wire"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/postgres"
)

const wirePayloadBytes = wire.PayloadBytes

// fanoutCase is E events, each to R receivers.
type fanoutCase struct{ R, E int }

// result is one system's measurement of one fan-out case over the runs.
type result struct {
	perSec, secs, walPer, rowsPer, rss, workerCPU, pgCPU, recvCPU, firstMS sample
	// fromFirst is deliveries/s from the first receipt to the last: the
	// rate once the worker process is up, as the bare client's clock runs
	// from its first request (for the bare client, perSec).
	fromFirst                         sample
	prodSecs, prodWalPer, prodRowsPer sample
	mostInFlight                      sample // the receiver's most requests of the run at once
	dups, short                       int64
}

func (r *result) add(d fanoutRun) {
	n := float64(d.deliveries)
	r.secs = append(r.secs, d.took.Seconds())
	r.perSec = append(r.perSec, n/d.took.Seconds())
	r.fromFirst = append(r.fromFirst, n/(d.took-d.first).Seconds())
	total := d.produce.add(d.deliver)
	r.walPer = append(r.walPer, float64(total.wal)/n)
	r.rowsPer = append(r.rowsPer, float64(total.rows())/n)
	r.prodSecs = append(r.prodSecs, d.produceTook.Seconds())
	r.prodWalPer = append(r.prodWalPer, float64(d.produce.wal)/n)
	r.prodRowsPer = append(r.prodRowsPer, float64(d.produce.rows())/n)
	r.rss = append(r.rss, float64(d.rss)/(1<<20))
	r.workerCPU = append(r.workerCPU, d.workerCPU.Seconds())
	r.pgCPU = append(r.pgCPU, d.deliver.pgCPU.Seconds())
	r.recvCPU = append(r.recvCPU, d.recvCPU.Seconds())
	r.firstMS = append(r.firstMS, ms(d.first))
	r.mostInFlight = append(r.mostInFlight, float64(d.mostInFlight))
	r.dups += d.dups
	r.short += d.short
}

// fanoutRun is one run of one system.
type fanoutRun struct {
	deliveries       int64
	took             time.Duration // worker start → last receipt (bare client: first request → last answer)
	first            time.Duration // worker start → first receipt
	produceTook      time.Duration
	produce, deliver delta
	rss              int64
	workerCPU        time.Duration
	recvCPU          time.Duration
	mostInFlight     int64 // the most requests the receiver held at once
	dups, short      int64
}

// fanoutSystems are the systems of a fan-out run, in the order they run
// for each case. With -herald-baseline its binary ("baseline") runs just
// before this tree's herald in odd runs and just after it in even ones, so
// that neither always follows the bare client or precedes River.
func fanoutSystems(cfg config, run int) []string {
	switch {
	case cfg.baseline == "":
		return []string{"limit", "herald", "river"}
	case run%2 == 1:
		return []string{"limit", "baseline", "herald", "river"}
	default:
		return []string{"limit", "herald", "baseline", "river"}
	}
}

func fanout(ctx context.Context, e *env, cfg config, rep *report) (map[string]map[int]*result, error) {
	res := make(map[string]map[int]*result) // system → R → result
	for _, sys := range fanoutSystems(cfg, 1) {
		res[sys] = map[int]*result{}
		for _, c := range cfg.fanout {
			res[sys][c.R] = &result{}
		}
	}
	for run := 1; run <= cfg.runs; run++ {
		for _, c := range cfg.fanout {
			for _, sys := range fanoutSystems(cfg, run) {
				logf("fan-out R=%d E=%d run %d/%d: %s", c.R, c.E, run, cfg.runs, sys)
				var (
					d   fanoutRun
					err error
				)
				switch sys {
				case "limit":
					d, err = bareRun(ctx, e, cfg, c, run)
				case "herald", "baseline":
					d, err = heraldRun(ctx, e, cfg, c, run, sys)
				case "river":
					d, err = riverRun(ctx, e, cfg, c, run)
				}
				if err != nil {
					return nil, fmt.Errorf("%s R=%d run %d: %w", sys, c.R, run, err)
				}
				logf("  %d deliveries in %v: %.0f/s", d.deliveries, d.took.Round(time.Millisecond), float64(d.deliveries)/d.took.Seconds())
				res[sys][c.R].add(d)
			}
		}
	}
	reportFanout(rep, cfg, res)
	return res, nil
}

// fanoutAt is the fan-out results at each concurrency: concurrency →
// system → R → result.
type fanoutAt map[int]map[string]map[int]*result

// best returns the concurrency at which sys had its highest median for R.
func (f fanoutAt) best(sys string, r int, concs []int) int {
	best := concs[0]
	for _, c := range concs {
		if f[c][sys][r].perSec.median() > f[best][sys][r].perSec.median() {
			best = c
		}
	}
	return best
}

func reportBest(rep *report, cfg config, f fanoutAt) {
	rep.printf("#### Best against best (concurrencies %v)\n\n", cfg.fanoutConcs)
	rep.printf("Each system at the concurrency where its median deliveries/s was highest, and the bare client at herald's best concurrency (issue 14's goal: herald ≥ 0.9× of it there).\n\n")
	rep.printf("| R | E | bare client best /s (at) | herald best /s (at) | River best /s (at) | herald/River, best against best | bare client at herald's best /s | herald / bare client there | herald from its first delivery /s | ÷ bare client there | River from its first delivery /s (at its best) |\n|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cfg.fanout {
		lc, hc, rc := f.best("limit", c.R, cfg.fanoutConcs), f.best("herald", c.R, cfg.fanoutConcs), f.best("river", c.R, cfg.fanoutConcs)
		l, h, r, lh := f[lc]["limit"][c.R], f[hc]["herald"][c.R], f[rc]["river"][c.R], f[hc]["limit"][c.R]
		rep.printf("| %s | %s | %s (%d) | %s (%d) | %s (%d) | %s | %s | %s | %s | %s | %s |\n", fmtNum(float64(c.R), 0), fmtNum(float64(c.E), 0),
			l.perSec.cell(0), lc, h.perSec.cell(0), hc, r.perSec.cell(0), rc, ratio(h.perSec, r.perSec), lh.perSec.cell(0), ratio(h.perSec, lh.perSec),
			h.fromFirst.cell(0), ratio(h.fromFirst, lh.perSec), r.fromFirst.cell(0))
	}
	rep.printf("\nherald's and River's deliveries/s run from their worker process's start (exec, connecting, the first claim: \"start → first delivery\" in the detail table), the bare client's from its first request. \"From its first delivery\" is E×R over the first receipt → the last: near the bare client's footing (it leaves out the first round trip, under a millisecond here).\n\n")
}

// group names a run's deliveries at the receiver: unique per system,
// concurrency, case and run, so that no run counts another's.
func group(sys string, conc int, c fanoutCase, run int) string {
	return fmt.Sprintf("%s-c%d-r%d-e%d-run%d", sys, conc, c.R, c.E, run)
}

// bareRun is the machine's limit: cfg.conc goroutines POST E×R requests,
// route k%R, event k/R, with one keep-alive client; no database.
func bareRun(ctx context.Context, e *env, cfg config, c fanoutCase, run int) (fanoutRun, error) {
	g := group("bare", cfg.conc, c, run)
	total := int64(c.E) * int64(c.R)
	client := wire.NewClient(cfg.conc)
	signers := &wire.Signers{}
	payloads := make([][]byte, c.E)
	for i := range payloads {
		payloads[i] = wire.Payload(i)
	}
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	recv0, self0 := e.recv.cpu(), selfCPU()
	start := time.Now()
	for range cfg.conc {
		wg.Go(func() {
			for {
				k := next.Add(1) - 1
				if k >= total || ctx.Err() != nil {
					return
				}
				route, ev := int(k%int64(c.R)), int(k/int64(c.R))
				wh, err := signers.For(route)
				if err == nil {
					err = wire.Post(ctx, client, fmt.Sprintf("%s/d/%s/%d", e.recvURL, g, route), "evt-"+strconv.Itoa(ev), payloads[ev], wh)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if firstErr != nil {
		return fanoutRun{}, firstErr
	}
	d := fanoutRun{deliveries: total, took: took, recvCPU: e.recv.cpu() - recv0, workerCPU: selfCPU() - self0}
	var st recvStats
	if err := e.recvGet(ctx, "/stats", url.Values{"group": {g}}, &st); err != nil {
		return d, err
	}
	d.mostInFlight = st.MostInFlight
	var err error
	d.dups, d.short, err = e.routes(ctx, g, c.R, int64(c.E))
	return d, err
}

// heraldRun: R registrations of one stream (the setup, not measured), E
// appends to it by cfg.producers goroutines (the produce phase), then
// `herald run` delivers them (the deliver phase, timed from its start to
// the last receipt). sys "baseline" runs -herald-baseline's binary on the
// schema it knows, "herald" this tree's.
func heraldRun(ctx context.Context, e *env, cfg config, c fanoutCase, run int, sys string) (fanoutRun, error) {
	g := group(sys, cfg.conc, c, run)
	db := fmt.Sprintf("%s_%d_%d", sys, c.R, run)
	dbURL, err := e.heraldDB(ctx, db)
	defer e.dropDB(ctx, db)
	if err != nil {
		return fanoutRun{}, err
	}
	const stream = "fanout/orders"
	st, err := postgres.Open(ctx, dbURL, postgres.WithKeyring(keyring))
	if err != nil {
		return fanoutRun{}, err
	}
	if err := registerAll(ctx, st, stream, c.R, 0, func(i int) string { return fmt.Sprintf("%s/d/%s/%d", e.recvURL, g, i) }); err != nil {
		st.Close()
		return fanoutRun{}, err
	}
	st.Close()

	var d fanoutRun
	s0, err := e.snap(ctx, dbURL, db)
	if err != nil {
		return d, err
	}
	st, err = postgres.Open(ctx, withPool(dbURL, cfg.producers), postgres.WithKeyring(keyring))
	if err != nil {
		return d, err
	}
	start := time.Now()
	err = parallel(ctx, cfg.producers, c.E, func(i int) error {
		_, err := st.Append(ctx, stream, journal.Entry{ID: fmt.Sprintf("evt-%d", i), Kind: "order.updated",
			ContentType: "application/json", Payload: wire.Payload(i)})
		return err
	})
	d.produceTook = time.Since(start)
	st.Close()
	if err != nil {
		return d, err
	}
	bin := e.herald
	if sys == "baseline" {
		bin = cfg.baseline
		if err := schemaOf(ctx, bin, dbURL); err != nil {
			return d, err
		}
	}
	s1, err := e.snap(ctx, dbURL, db)
	if err != nil {
		return d, err
	}
	args := []string{"run", "--database", dbURL, "--namespaces", webhook.Namespace, "--allow-http", "--allow-private-network",
		"--metrics-addr", "", "--admin-addr", "", "--max-in-flight", strconv.Itoa(cfg.conc),
		// The R receivers are routes of one receiver process, one host,
		// standing in for R hosts: the per-host cap does not bind.
		"--max-per-host", strconv.Itoa(push.MaxPerHostLimit), "--every", cfg.heraldEvery.String()}
	var extra []string
	if cfg.fanoutProfile != "" {
		extra = []string{"HERALD_CPUPROFILE=" + filepath.Join(cfg.fanoutProfile, g)}
	}
	return deliverWith(ctx, e, d, "herald", bin, args, extra, g, c, dbURL, db, s0, s1)
}

// deliverWith starts the worker process, waits for every delivery, records
// its peak RSS and CPU, stops it and measures what the deliver phase wrote.
func deliverWith(ctx context.Context, e *env, d fanoutRun, name, bin string, args, env []string, g string, c fanoutCase,
	dbURL, db string, s0, s1 snapshot) (fanoutRun, error) {
	total := int64(c.E) * int64(c.R)
	recv0 := e.recv.cpu()
	start := time.Now()
	p, err := startProc(e, name, bin, args, env)
	if err != nil {
		return d, err
	}
	st, err := e.wait(ctx, g, total, p)
	if err != nil {
		_ = p.stop()
		return d, err
	}
	d.deliveries = total
	d.took = time.Duration(st.ReachedNS - start.UnixNano())
	d.first = time.Duration(st.FirstNS - start.UnixNano())
	d.mostInFlight = st.MostInFlight
	d.rss = p.peakRSS()
	d.workerCPU = p.cpu()
	d.recvCPU = e.recv.cpu() - recv0
	if err := p.stop(); err != nil {
		return d, err
	}
	s2, err := e.snap(ctx, dbURL, db)
	if err != nil {
		return d, err
	}
	if d.produce, err = e.diff(ctx, s0, s1); err != nil {
		return d, err
	}
	if d.deliver, err = e.diff(ctx, s1, s2); err != nil {
		return d, err
	}
	d.dups, d.short, err = e.routes(ctx, g, c.R, int64(c.E))
	return d, err
}

// registerAll registers n webhook receivers of stream with window window
// (0: the default, 1), 16 at a time.
func registerAll(ctx context.Context, st *postgres.Store, stream string, n, window int, url func(int) string) error {
	return parallel(ctx, 16, n, func(i int) error {
		cfg, err := webhook.Config{Secrets: []string{wire.Secret(i)}}.Encode()
		if err != nil {
			return err
		}
		_, err = st.Register(ctx, push.Registration{Stream: stream, ID: fmt.Sprintf("rcv-%04d", i),
			Namespace: webhook.Namespace, URL: url(i), Config: cfg, Window: window})
		return err
	})
}

// parallel runs fn(0…n-1) on workers goroutines; the first error stops it.
func parallel(ctx context.Context, workers, n int, fn func(i int) error) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
		failed   atomic.Bool
	)
	for range workers {
		wg.Go(func() {
			for !failed.Load() && ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { firstErr = err })
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// riverRun: River's schema (setup), E transactions of R jobs each (one job
// per event × receiver, InsertManyTx, by cfg.producers goroutines: the
// produce phase), then the riverworker process works them (the deliver
// phase, timed from its start to the last receipt).
func riverRun(ctx context.Context, e *env, cfg config, c fanoutCase, run int) (fanoutRun, error) {
	g := group("river", cfg.conc, c, run)
	db := fmt.Sprintf("river_%d_%d", c.R, run)
	dbURL, err := e.createDB(ctx, db)
	if err != nil {
		return fanoutRun{}, err
	}
	defer e.dropDB(ctx, db)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return fanoutRun{}, err
	}
	mig, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err == nil {
		_, err = mig.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	pool.Close()
	if err != nil {
		return fanoutRun{}, err
	}

	var d fanoutRun
	s0, err := e.snap(ctx, dbURL, db)
	if err != nil {
		return d, err
	}
	if pool, err = pgxpool.New(ctx, withPool(dbURL, cfg.producers)); err != nil {
		return d, err
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{}) // insert-only
	if err != nil {
		pool.Close()
		return d, err
	}
	start := time.Now()
	err = parallel(ctx, cfg.producers, c.E, func(i int) error {
		params := make([]river.InsertManyParams, c.R)
		payload := wire.Payload(i)
		for r := range params {
			params[r] = river.InsertManyParams{Args: wire.DeliveryArgs{
				URL: fmt.Sprintf("%s/d/%s/%d", e.recvURL, g, r), Route: r, EventID: fmt.Sprintf("evt-%d", i), Payload: payload}}
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		if _, err := client.InsertManyTx(ctx, tx, params); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	d.produceTook = time.Since(start)
	pool.Close()
	if err != nil {
		return d, err
	}
	s1, err := e.snap(ctx, dbURL, db)
	if err != nil {
		return d, err
	}
	args := []string{"-database", dbURL, "-workers", strconv.Itoa(cfg.conc), "-fetch-cooldown", cfg.riverCool.String()}
	return deliverWith(ctx, e, d, "riverworker", e.riverBin, args, nil, g, c, dbURL, db, s0, s1)
}

func reportFanout(rep *report, cfg config, res map[string]map[int]*result) {
	rep.printf("### Fan-out: deliveries per second, write cost, memory\n\n")
	rep.printf("E events, each to R receivers (routes of the one receiver process), E×R deliveries:\n\n")
	rep.printf("- **herald**: one stream with R webhook registrations (registered before, not measured); E appends (`Store.Append`, one record and one transaction each, %d goroutines); then `herald run --namespaces webhook --max-in-flight %d --max-per-host %d` (a separate process, LISTEN/NOTIFY on; the R routes stand in for R hosts, so the per-host cap does not bind) delivers the backlog.\n", cfg.producers, cfg.conc, push.MaxPerHostLimit)
	rep.printf("- **River**: E transactions each inserting R jobs (`InsertManyTx`, one job per event × receiver, the payload in the job's args, %d goroutines); then a separate River worker process (`bench/cmd/riverworker`, `MaxWorkers: %d`) whose worker POSTs the job.\n", cfg.producers, cfg.conc)
	rep.printf("- **limit**: the same requests from %d goroutines of a bare Go HTTP client loop with keep-alive, no database.\n", cfg.conc)
	rep.printf("- **deliveries/s** = E×R / (worker process start → the receiver's last receipt); the backlog was fully committed before the worker started. The bare client: first request → last answer.\n")
	rep.printf("- **WAL B** and **rows** are per delivery (one event received by one receiver), for the produce and deliver phases together: `pg_current_wal_lsn()` difference (cluster-wide: it includes autovacuum and checkpoints of the period) and `pg_stat_user_tables` n_tup_ins + n_tup_upd + n_tup_del of the database. **RSS** is the worker process's peak (VmHWM). **CPU** is seconds of CPU in the deliver phase: worker process (for the bare client: the benchmark process, which does nothing else then) / PostgreSQL (all its processes) / receiver.\n\n")

	rep.printf("#### Headline\n\n")
	rep.printf("| R | E | limit deliveries/s | herald deliveries/s | River deliveries/s | herald/River | herald/limit | herald WAL B/delivery | River WAL B/delivery | herald/River WAL |\n")
	rep.printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cfg.fanout {
		l, h, r := res["limit"][c.R], res["herald"][c.R], res["river"][c.R]
		rep.printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", fmtNum(float64(c.R), 0), fmtNum(float64(c.E), 0),
			l.perSec.cell(0), h.perSec.cell(0), r.perSec.cell(0), ratio(h.perSec, r.perSec), ratio(h.perSec, l.perSec),
			h.walPer.cell(0), r.walPer.cell(0), ratio(h.walPer, r.walPer))
	}
	rep.printf("\nRatios are of the medians; in brackets, the range of the ratios within each run (limit, herald and River run one after the other for each R in every run).\n")
	if cfg.baseline != "" {
		rep.printf("\n#### This tree's herald against the baseline\n\n")
		rep.printf("The baseline `%s` (-herald-baseline) delivers the same backlog the same way, on its own database, just before this tree's herald in odd runs and just after it in even ones; \"× bare client\" is of the bare client of the same case and run (median, and in brackets the range of the per-run ratios).\n\n", cfg.baseline)
		rep.printf("| R | E | bare client /s | baseline /s | baseline × bare client | this tree /s | this tree × bare client | this tree × baseline | from the first delivery, × bare client: baseline / this tree | CPU s worker: baseline / this tree |\n|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
		for _, c := range cfg.fanout {
			l, b, h := res["limit"][c.R], res["baseline"][c.R], res["herald"][c.R]
			rep.printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |\n", fmtNum(float64(c.R), 0), fmtNum(float64(c.E), 0),
				l.perSec.cell(0), b.perSec.cell(0), ratio(b.perSec, l.perSec), h.perSec.cell(0), ratio(h.perSec, l.perSec), ratio(h.perSec, b.perSec),
				ratio(b.fromFirst, l.perSec), ratio(h.fromFirst, l.perSec), fmtNum(b.workerCPU.median(), 1), fmtNum(h.workerCPU.median(), 1))
		}
	}
	rep.printf("\n#### Detail\n\n")
	rep.printf("| R | system | deliver s | deliveries/s | produce s | WAL B/delivery (produce part) | rows/delivery (produce part) | peak RSS MiB | start → first delivery ms | CPU s worker / PostgreSQL / receiver | duplicates, routes short |\n")
	rep.printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, c := range cfg.fanout {
		for _, sys := range fanoutSystems(cfg, 1) {
			x := res[sys][c.R]
			name := map[string]string{"limit": "bare client", "herald": "herald", "baseline": "herald (baseline)", "river": "River"}[sys]
			if sys == "limit" {
				rep.printf("| %s | %s | %s | %s | – | – | – | – | – | %s / – / %s | %d, %d |\n", fmtNum(float64(c.R), 0), name,
					x.secs.cell(2), x.perSec.cell(0), fmtNum(x.workerCPU.median(), 1), fmtNum(x.recvCPU.median(), 1), x.dups, x.short)
				continue
			}
			rep.printf("| %s | %s | %s | %s | %s | %s (%s) | %s (%s) | %s | %s | %s / %s / %s | %d, %d |\n", fmtNum(float64(c.R), 0), name,
				x.secs.cell(2), x.perSec.cell(0), x.prodSecs.cell(1), x.walPer.cell(0), fmtNum(x.prodWalPer.median(), 0),
				x.rowsPer.cell(2), fmtNum(x.prodRowsPer.median(), 2), x.rss.cell(0), x.firstMS.cell(0),
				fmtNum(x.workerCPU.median(), 1), fmtNum(x.pgCPU.median(), 1), fmtNum(x.recvCPU.median(), 1), x.dups, x.short)
		}
	}
	rep.printf("\n")
}

// selfCPU is the benchmark process's user + system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
