package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/bench/internal/wire"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/postgres"
)

type latResult struct {
	p50, p90, p99, max, appP50, appP99, rate, rss, workerCPU, pgCPU sample
	seqP50, seqP99, seqSteps                                        sample // commit to the sequencer step's notification; steps/s
	silentConns, silentReqs, silentSecs                             sample // the silent host's, from the daemon's start to the last receipt (silentSecs long)
	unnumbered, undelivered                                         sample // when the appends stopped
}

// latCase is one latency measurement: silent registrations on the silent
// host beside the healthy ones, and the daemon's --max-per-host (0: its
// default).
type latCase struct {
	name       string
	silent     int
	host       *silentHost
	maxPerHost int
	manyHosts  bool // each stream's receiver on its own host (127.0.1.x), else all on 127.0.0.1
	dur        time.Duration
	seqEvery   time.Duration // the daemon's --sequencer-interval (0: its default)
	baseline   bool          // served by -herald-baseline's binary instead of this tree's
}

func latency(ctx context.Context, e *env, cfg config, rep *report) error {
	// The cases, in the order they run within each run: with a baseline,
	// its binary just before this tree's at each interval.
	var cases []latCase
	for i, every := range cfg.latSeqEvery {
		for _, base := range []bool{true, false} {
			if base && cfg.baseline == "" {
				continue
			}
			// The receiver process stands in for the 100 streams' receivers, so
			// it is not held to one host's cap.
			name := fmt.Sprintf("lat-%d", i) // a group (and database) of its own for each
			if base {
				name += "-base"
			}
			cases = append(cases, latCase{name: name, maxPerHost: push.MaxPerHostLimit, dur: cfg.latFor, seqEvery: every, baseline: base})
		}
	}
	rs := make([]latResult, len(cases))
	stmts := make([][][]stmtStat, len(cases)) // per case, per run
	for run := 1; run <= cfg.runs; run++ {
		order := make([]int, len(cases))
		for i := range order {
			order[i] = i
		}
		if cfg.baseline != "" && run%2 == 0 {
			// Even runs put this tree's binary first at each interval, so
			// that neither always runs second (after the other's WAL and
			// checkpoint).
			for i := 0; i+1 < len(order); i += 2 {
				order[i], order[i+1] = order[i+1], order[i]
			}
		}
		for _, i := range order {
			c := cases[i]
			logf("latency run %d/%d: %d appends/s for %v, %s", run, cfg.runs, cfg.latRate, cfg.latFor, latCaseName(c))
			st, err := latencyRun(ctx, e, cfg, run, &rs[i], c)
			if err != nil {
				return err
			}
			stmts[i] = append(stmts[i], st)
		}
	}
	total := cfg.latRate * int(cfg.latFor/time.Second)
	rep.printf("### Latency: append to receipt, with the daemon\n\n")
	rep.printf("`herald run --namespaces webhook --max-in-flight %d --max-per-host %d --every 1s` (a separate process; it runs the sequencer, which numbers committed records and notifies, and claims at once when LISTEN/NOTIFY reports numbered records; the receiver process stands in for the streams' receivers' hosts, so the per-host cap does not bind) serves %d streams with one webhook registration each, with `--sequencer-interval` 5ms (a fixed 5 ms cadence, herald before the adaptive one), at its default (%v) and at 20ms, in turn within each run. The benchmark appends one record at a time (`Store.AppendTx` in a transaction of its own: BEGIN, AppendTx, COMMIT) on a fixed schedule of %d appends/s for %v (%s appends, round-robin over the streams, issued by up to %d goroutines so that the schedule does not wait for slow commits), after a warm-up of %d appends. Latency is from the commit returning to the receiver reading the request (both clocks are this machine's). Append latency is from the scheduled instant to the commit.\n\n",
		cfg.conc, push.MaxPerHostLimit, cfg.latStreams, postgres.DefaultSequencerInterval, cfg.latRate, cfg.latFor, fmtNum(float64(total), 0), cfg.latAppenders, 2*cfg.latStreams)
	if cfg.baseline != "" {
		rep.printf("Each case is run by the baseline `%s` (-herald-baseline) and by this tree's herald, one just after the other: the baseline first in odd runs, second in even ones.\n\n", cfg.baseline)
	}
	rep.printf("| case | append → receipt p50 ms | p90 ms | p99 ms | max ms | of which commit → numbered p50 ms | p99 ms | sequencer steps/s | append p50 ms | append p99 ms | achieved appends/s | daemon peak RSS MiB | CPU s daemon / PostgreSQL | at the end: without a seq / not acknowledged |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for i, c := range cases {
		r := rs[i]
		rep.printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |\n", latCaseName(c), r.p50.cell(1), r.p90.cell(1), r.p99.cell(1), r.max.cell(1),
			orDash(r.seqP50, 1), orDash(r.seqP99, 1), orDash(r.seqSteps, 0),
			r.appP50.cell(1), r.appP99.cell(1), r.rate.cell(0), r.rss.cell(0), fmtNum(r.workerCPU.median(), 1), fmtNum(r.pgCPU.median(), 1),
			r.unnumbered.cell(0), r.undelivered.cell(0))
	}
	rep.printf("\nCommit → numbered is from the commit returning to the arrival, in the benchmark process, of the notification of the sequencer step that gave the record its seq (the step is the xmin of the record's herald_seq row).\n\n")
	if cfg.latStatements {
		for i, c := range cases {
			printStmts(rep, latCaseName(c), stmts[i])
		}
	}
	return nil
}

// latCaseName is a latency case as the report names it.
func latCaseName(c latCase) string {
	n := "--sequencer-interval " + seqEveryName(c.seqEvery)
	if c.baseline {
		n += " (baseline)"
	}
	return n
}

// seqEveryName is a --sequencer-interval value as the report names it.
func seqEveryName(d time.Duration) string {
	if d == 0 {
		return fmt.Sprintf("%v (default)", postgres.DefaultSequencerInterval)
	}
	return d.String()
}

// latencyRun runs one latency case. With -lat-statements it returns the
// statements PostgreSQL ran in the case's database from the first timed
// append to the last receipt.
func latencyRun(ctx context.Context, e *env, cfg config, run int, r *latResult, lc latCase) ([]stmtStat, error) {
	g := fmt.Sprintf("%s-run%d", lc.name, run)
	db := fmt.Sprintf("%s_%d", strings.ReplaceAll(lc.name, "-", "_"), run)
	dbURL, err := e.heraldDB(ctx, db)
	defer e.dropDB(ctx, db)
	if err != nil {
		return nil, err
	}
	st, err := postgres.Open(ctx, withPool(dbURL, cfg.latAppenders), postgres.WithKeyring(keyring))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	for i := range cfg.latStreams {
		base := e.recvURL
		if lc.manyHosts {
			base = e.recvURLs[i%len(e.recvURLs)]
		}
		if err := registerAll(ctx, st, streamOf(i), 1, 0, func(int) string { return fmt.Sprintf("%s/d/%s/%d", base, g, i) }); err != nil {
			return nil, err
		}
	}
	for i := range lc.silent {
		stream := fmt.Sprintf("silent/%03d", i)
		if _, err := st.Append(ctx, stream, journal.Entry{ID: "silent-" + strconv.Itoa(i), Kind: "order.updated",
			ContentType: "application/json", Payload: wire.Payload(i)}); err != nil {
			return nil, err
		}
		if err := registerAll(ctx, st, stream, 1, 0, func(int) string { return fmt.Sprintf("%s/inbox/%d", lc.host.url, i) }); err != nil {
			return nil, err
		}
	}
	args := []string{"run", "--database", dbURL, "--namespaces", webhook.Namespace,
		"--allow-http", "--allow-private-network", "--metrics-addr", "", "--admin-addr", "",
		"--max-in-flight", strconv.Itoa(cfg.conc), "--every", "1s"}
	if lc.maxPerHost > 0 {
		args = append(args, "--max-per-host", strconv.Itoa(lc.maxPerHost))
	}
	if lc.seqEvery > 0 {
		args = append(args, "--sequencer-interval", lc.seqEvery.String())
	}
	// The silent host is counted from the daemon's start: its first
	// requests go out then, before the warm-up ends.
	var conns0, reqs0 int64
	if lc.host != nil {
		conns0, reqs0 = lc.host.conns.Load(), lc.host.reqs.Load()
	}
	daemonStart := time.Now()
	bin := e.herald
	if lc.baseline {
		bin = cfg.baseline
	}
	p, err := startProc(e, "herald-daemon", bin, args, nil)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	// AppendTx in a transaction of its own: the daemon's sequencer numbers
	// the record after the commit, as for an application's transaction.
	appendOne := func(k int, id string) error {
		return pgx.BeginFunc(ctx, st.Pool(), func(tx pgx.Tx) error {
			_, err := st.AppendTx(ctx, tx, streamOf(k%cfg.latStreams), journal.Entry{ID: id, Kind: "order.updated",
				ContentType: "application/json", Payload: wire.Payload(k)})
			return err
		})
	}
	warm := 2 * cfg.latStreams
	for k := range warm {
		if err := appendOne(k, fmt.Sprintf("warm-%d", k)); err != nil {
			return nil, err
		}
	}
	if _, err := e.wait(ctx, g, int64(warm), p); err != nil {
		return nil, err
	}
	// The sequencer's steps, as the daemon's notifications report them:
	// every step that numbers records notifies once, in commit order.
	steps, err := listenSteps(ctx, st)
	if err != nil {
		return nil, err
	}
	defer steps.close()

	if cfg.latStatements {
		if err := resetStmts(ctx, st); err != nil {
			return nil, err
		}
	}
	total := cfg.latRate * int(lc.dur/time.Second)
	commit := make([]int64, total)
	appLat := make([]time.Duration, total)
	jobs := make(chan int, total)
	cpu0, pg0 := p.cpu(), e.pgCPU()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	interval := time.Second / time.Duration(cfg.latRate)
	start := time.Now()
	for range cfg.latAppenders {
		wg.Go(func() {
			for k := range jobs {
				target := start.Add(time.Duration(k) * interval)
				if err := appendOne(k, fmt.Sprintf("lat-%d", k)); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					continue
				}
				now := time.Now()
				commit[k] = now.UnixNano()
				appLat[k] = now.Sub(target)
			}
		})
	}
	for k := range total {
		if d := time.Until(start.Add(time.Duration(k) * interval)); d > 0 {
			time.Sleep(d)
		}
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	achieved := float64(total) / time.Since(start).Seconds()
	if firstErr != nil {
		return nil, firstErr
	}
	// How far behind the sequencer and the deliveries were when the
	// appends stopped.
	var unnumbered, undelivered int64
	if err := st.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM herald_record r WHERE NOT EXISTS (SELECT 1 FROM herald_seq q WHERE q.id = r.id)),
    coalesce((SELECT sum(s.head - r.next_seq + 1) FROM herald_registration r JOIN herald_stream s USING (stream) WHERE r.next_seq <= s.head), 0)`).Scan(&unnumbered, &undelivered); err != nil {
		return nil, err
	}
	r.unnumbered, r.undelivered = append(r.unnumbered, float64(unnumbered)), append(r.undelivered, float64(undelivered))
	logf("  at the end of the appends: %d records without a seq, %d numbered but not acknowledged", unnumbered, undelivered)
	if _, err := e.wait(ctx, g, int64(warm+total), p); err != nil {
		return nil, err
	}
	var stmts []stmtStat
	if cfg.latStatements {
		if stmts, err = readStmts(ctx, st, time.Since(start)); err != nil {
			return nil, err
		}
	}
	if lc.host != nil {
		r.silentConns = append(r.silentConns, float64(lc.host.conns.Load()-conns0))
		r.silentReqs = append(r.silentReqs, float64(lc.host.reqs.Load()-reqs0))
		r.silentSecs = append(r.silentSecs, time.Since(daemonStart).Seconds())
	}
	if sl, n, ok := steps.lags(ctx, st, commit); ok {
		slices.Sort(sl)
		r.seqP50, r.seqP99 = append(r.seqP50, ms(sl[len(sl)/2])), append(r.seqP99, ms(sl[len(sl)*99/100]))
		r.seqSteps = append(r.seqSteps, float64(n)/lc.dur.Seconds())
		logf("  commit to numbered: p50 %.1f ms, p99 %.1f ms, %d steps", ms(sl[len(sl)/2]), ms(sl[len(sl)*99/100]), n)
	}
	r.rss = append(r.rss, float64(p.peakRSS())/(1<<20))
	r.workerCPU = append(r.workerCPU, (p.cpu() - cpu0).Seconds())
	r.pgCPU = append(r.pgCPU, (e.pgCPU() - pg0).Seconds())
	var receipts [][2]any
	if err := e.recvGet(ctx, "/receipts", url.Values{"group": {g}}, &receipts); err != nil {
		return nil, err
	}
	var lat []time.Duration
	for _, rc := range receipts {
		id, _ := rc[0].(string)
		ns, _ := rc[1].(float64)
		var k int
		if _, err := fmt.Sscanf(id, "lat-%d", &k); err != nil || k < 0 || k >= total {
			continue // warm-up
		}
		lat = append(lat, time.Duration(int64(ns)-commit[k]))
	}
	if len(lat) < total {
		return nil, fmt.Errorf("%d of %d appends were received", len(lat), total)
	}
	slices.Sort(lat)
	slices.Sort(appLat)
	q := func(s []time.Duration, f float64) float64 { return ms(s[min(len(s)-1, int(float64(len(s))*f))]) }
	r.p50 = append(r.p50, q(lat, 0.5))
	r.p90 = append(r.p90, q(lat, 0.9))
	r.p99 = append(r.p99, q(lat, 0.99))
	r.max = append(r.max, ms(lat[len(lat)-1]))
	r.appP50 = append(r.appP50, q(appLat, 0.5))
	r.appP99 = append(r.appP99, q(appLat, 0.99))
	r.rate = append(r.rate, achieved)
	logf("  p50 %.1f ms, p99 %.1f ms, %.0f appends/s", q(lat, 0.5), q(lat, 0.99), achieved)
	return stmts, nil
}

// stepLog records when each sequencer step's notification arrived.
type stepLog struct {
	mu    sync.Mutex
	at    []int64 // UnixNano, in arrival (commit) order
	close func()
}

func listenSteps(ctx context.Context, st *postgres.Store) (*stepLog, error) {
	l, err := st.Listen(ctx)
	if err != nil {
		return nil, err
	}
	sl := &stepLog{close: l.Close}
	go func() {
		for {
			if _, err := l.Wait(ctx); err != nil {
				return
			}
			now := time.Now().UnixNano()
			sl.mu.Lock()
			sl.at = append(sl.at, now)
			sl.mu.Unlock()
		}
	}()
	return sl, nil
}

// lags returns, for each timed record, the time from its commit to the
// notification of the step that numbered it, and how many steps numbered
// them. The step of a record is the xmin of its herald_seq row (the
// sequencer's step wrote it); steps run one at a time, so their xids ascend in
// commit order, the order of the notifications. ok is false when the two
// counts disagree (another process numbered some).
func (sl *stepLog) lags(ctx context.Context, st *postgres.Store, commit []int64) ([]time.Duration, int, bool) {
	sl.close()
	sl.mu.Lock()
	at := slices.Clone(sl.at)
	sl.mu.Unlock()
	rows, err := st.Pool().Query(ctx, `SELECT id, xmin::text::bigint FROM herald_seq WHERE id LIKE 'lat-%' AND seq IS NOT NULL`)
	if err != nil {
		return nil, 0, false
	}
	byID := map[string]int64{}
	var (
		id string
		x  int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &x}, func() error { byID[id] = x; return nil }); err != nil {
		return nil, 0, false
	}
	var xids []int64
	for _, x := range byID {
		xids = append(xids, x)
	}
	slices.Sort(xids)
	xids = slices.Compact(xids)
	if len(xids) != len(at) || len(byID) != len(commit) {
		logf("  commit to numbered: %d steps numbered the records, %d notifications heard: not measured", len(xids), len(at))
		return nil, 0, false
	}
	var out []time.Duration
	for id, x := range byID {
		var k int
		if _, err := fmt.Sscanf(id, "lat-%d", &k); err != nil || k < 0 || k >= len(commit) {
			return nil, 0, false
		}
		i, _ := slices.BinarySearch(xids, x)
		out = append(out, time.Duration(at[i]-commit[k]))
	}
	return out, len(xids), true
}

func streamOf(i int) string { return fmt.Sprintf("lat/%03d", i) }

func orDash(s sample, decimals int) string {
	if len(s) == 0 {
		return "–"
	}
	return s.cell(decimals)
}

// withPool sets pgxpool's pool size in a database URL.
func withPool(dbURL string, conns int) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(conns))
	u.RawQuery = q.Encode()
	return u.String()
}
