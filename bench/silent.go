package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/heraldpush/herald/bench/internal/wire"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/postgres"
)

// silentHost accepts connections and never answers: each request is held
// until the sender gives up (its timeout). It runs in the benchmark process
// on 127.0.0.2, another host than the receiver's 127.0.0.1, and counts the
// connections and requests it got.
type silentHost struct {
	srv         *http.Server
	url         string
	conns, reqs atomic.Int64
}

func startSilent() (*silentHost, error) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.2 (another loopback host): %w", err)
	}
	h := &silentHost{url: "http://" + ln.Addr().String()}
	h.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.reqs.Add(1)
			<-r.Context().Done()
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				h.conns.Add(1)
			}
		},
	}
	go func() {
		if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("silent host: %v", err)
		}
	}()
	return h, nil
}

// silentLatency is issue 14's measurement: the healthy receivers'
// append → receipt latency with 0, 1 and 50 registrations on a silent host
// beside them, in one run, with the daemon's defaults (--max-per-host 4).
func silentLatency(ctx context.Context, e *env, cfg config, rep *report) error {
	host, err := startSilent()
	if err != nil {
		return err
	}
	defer host.srv.Close()
	counts := []int{0, 1, 50}
	res := make([]latResult, len(counts))
	for run := 1; run <= cfg.runs; run++ {
		for i, n := range counts {
			logf("silent-host latency run %d/%d: %d silent registrations, %d appends/s for %v", run, cfg.runs, n, cfg.latRate, cfg.silentFor)
			lc := latCase{name: fmt.Sprintf("lat-silent%d", n), silent: n, host: host, manyHosts: true, dur: cfg.silentFor}
			if _, err := latencyRun(ctx, e, cfg, run, &res[i], lc); err != nil {
				return err
			}
		}
	}
	rep.printf("### A silent host beside healthy receivers\n\n")
	rep.printf("As in section 5 (%d streams, one webhook registration each, but each on its own host: the receiver process serves on 127.0.1.1 to 127.0.1.100 too; %d appends/s for %v after a warm-up; latency from `Append` returning to the receipt), with `herald run --max-in-flight %d` on its default `--max-per-host` (%d), and beside them 0, 1 or 50 registrations (one record each, due from the start) whose host, 127.0.0.2, accepts connections and never answers: each request is held until herald's `--timeout` (15 s) ends it. The three cases run one after the other in each run, each on a fresh database. The silent host's connections and requests are counted from the daemon's start (its first requests go out during the warm-up) to the last receipt.\n\n",
		cfg.latStreams, cfg.latRate, cfg.silentFor, cfg.conc, 4)
	rep.printf("| silent registrations | p50 ms | p90 ms | p99 ms | max ms | p99 / p99 with none | silent host: connections, requests (in s from the daemon's start) |\n|---:|---:|---:|---:|---:|---:|---|\n")
	for i, n := range counts {
		r := res[i]
		conns := "–"
		if n > 0 {
			conns = fmt.Sprintf("%s, %s (%s s)", r.silentConns.cell(0), r.silentReqs.cell(0), r.silentSecs.cell(1))
		}
		rep.printf("| %d | %s | %s | %s | %s | %s | %s |\n", n, r.p50.cell(1), r.p90.cell(1), r.p99.cell(1), r.max.cell(1),
			ratio(r.p99, res[0].p99), conns)
	}
	rep.printf("\n")
	return nil
}

// scaleOut is issue 14's scale-out: the same backlog delivered by 1, 2 and 4
// `herald run` processes on one PostgreSQL, against receivers that answer
// after 50 ms, so that the machine's cores are not the limit.
func scaleOut(ctx context.Context, e *env, cfg config, rep *report) error {
	const delay = 50 * time.Millisecond
	procs := []int{1, 2, 4}
	res := make([]result, len(procs))
	for run := 1; run <= cfg.runs; run++ {
		for i, n := range procs {
			logf("scale-out run %d/%d: %d herald run processes, %d registrations × %d records, receivers answering after %v",
				run, cfg.runs, n, cfg.scaleRegs, cfg.scaleRecords, delay)
			d, err := scaleRun(ctx, e, cfg, run, n, delay)
			if err != nil {
				return fmt.Errorf("%d processes: %w", n, err)
			}
			logf("  %d deliveries in %v: %.0f/s", d.deliveries, d.took.Round(time.Millisecond), float64(d.deliveries)/d.took.Seconds())
			res[i].add(d)
		}
	}
	rep.printf("### Scale-out: several `herald run` processes on one PostgreSQL\n\n")
	rep.printf("One stream with %d webhook registrations, each a route of the receiver that answers after %v (`?delay=`), and %d records appended before the workers start (%s deliveries). Then N `herald run --max-in-flight %d --max-per-host %d` processes (the receiver stands in for as many hosts as registrations, so the per-host cap does not bind) start together on the same database (leases and `FOR UPDATE SKIP LOCKED` share the work) and deliver the backlog; deliveries/s = deliveries / (first process start → the receiver's last answer). Each N on a fresh database.\n\n",
		cfg.scaleRegs, delay, cfg.scaleRecords, fmtNum(float64(cfg.scaleRegs*cfg.scaleRecords), 0), cfg.conc, push.MaxPerHostLimit)
	rep.printf("| processes | deliver s | deliveries/s | ratio to 1 process | ideal | duplicates, routes short |\n|---:|---:|---:|---:|---:|---|\n")
	for i, n := range procs {
		rep.printf("| %d | %s | %s | %s | %d× | %d, %d |\n", n, res[i].secs.cell(2), res[i].perSec.cell(0), ratio(res[i].perSec, res[0].perSec), n, res[i].dups, res[i].short)
	}
	rep.printf("\n")
	return nil
}

func scaleRun(ctx context.Context, e *env, cfg config, run, n int, delay time.Duration) (fanoutRun, error) {
	c := fanoutCase{R: cfg.scaleRegs, E: cfg.scaleRecords}
	g := fmt.Sprintf("scale-p%d-run%d", n, run)
	db := fmt.Sprintf("scale_%d_%d", n, run)
	dbURL, err := e.createDB(ctx, db)
	if err != nil {
		return fanoutRun{}, err
	}
	defer e.dropDB(ctx, db)
	if err := loadFanout(ctx, cfg, dbURL, c, 0, func(i int) string { return fmt.Sprintf("%s/d/%s/%d?delay=%v", e.recvURL, g, i, delay) }); err != nil {
		return fanoutRun{}, err
	}
	args := []string{"run", "--database", dbURL, "--namespaces", "webhook", "--allow-http", "--allow-private-network",
		"--metrics-addr", "", "--admin-addr", "", "--max-in-flight", fmt.Sprint(cfg.conc), "--max-per-host", fmt.Sprint(push.MaxPerHostLimit),
		"--every", cfg.heraldEvery.String()}
	total := int64(c.E) * int64(c.R)
	start := time.Now()
	var ps []*proc
	defer func() {
		for _, p := range ps {
			_ = p.stop()
		}
	}()
	for k := range n {
		p, err := startProc(e, fmt.Sprintf("herald-scale-%d-%d", n, k), e.herald, args, nil)
		if err != nil {
			return fanoutRun{}, err
		}
		ps = append(ps, p)
	}
	st, err := e.wait(ctx, g, total, ps[0])
	if err != nil {
		return fanoutRun{}, err
	}
	d := fanoutRun{deliveries: total, took: time.Duration(st.ReachedNS - start.UnixNano())}
	for _, p := range ps {
		if err := p.stop(); err != nil {
			return d, err
		}
	}
	ps = nil
	d.dups, d.short, err = e.routes(ctx, g, c.R, int64(c.E))
	return d, err
}

// loadFanout migrates a fresh database, registers c.R webhook receivers of
// one stream at url(i) with window window (0: 1) and appends c.E records
// to it.
func loadFanout(ctx context.Context, cfg config, dbURL string, c fanoutCase, window int, url func(int) string) error {
	if _, err := postgres.MigrateUp(ctx, dbURL); err != nil {
		return err
	}
	st, err := postgres.Open(ctx, withPool(dbURL, cfg.producers), postgres.WithKeyring(keyring))
	if err != nil {
		return err
	}
	defer st.Close()
	const stream = "fanout/orders"
	if err := registerAll(ctx, st, stream, c.R, window, url); err != nil {
		return err
	}
	return parallel(ctx, cfg.producers, c.E, func(i int) error {
		_, err := st.Append(ctx, stream, journal.Entry{ID: fmt.Sprintf("evt-%d", i), Kind: "order.updated",
			ContentType: "application/json", Payload: wire.Payload(i)})
		return err
	})
}
