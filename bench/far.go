package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// farCase is one far-receiver measurement: one registration with window W
// to a receiver that answers after delay, served by `herald run
// --max-per-host perHost`, n records.
type farCase struct {
	window, perHost int
	delay           time.Duration
	n               int
	page            int  // --drain-page; 0: the default (256)
	baseline        bool // served by -herald-baseline's binary instead of this tree's
}

func (c farCase) name() string {
	n := fmt.Sprintf("W=%d, --max-per-host %d", c.window, c.perHost)
	if c.page > 0 {
		n += fmt.Sprintf(", --drain-page %d", c.page)
	}
	if c.baseline {
		n += " (baseline)"
	}
	return n
}

// withBaseline puts a case run by the baseline binary before each case,
// so that the two alternate in every run, when there is a baseline.
func withBaseline(cfg config, cases []farCase) []farCase {
	if cfg.baseline == "" {
		return cases
	}
	var out []farCase
	for _, c := range cases {
		b := c
		b.baseline = true
		out = append(out, b, c)
	}
	return out
}

// binary names the herald that served c, for the tables.
func (c farCase) binary() string {
	if c.baseline {
		return "baseline"
	}
	return "this tree"
}

// farDelay is how far the far receiver is: 200 ms, Europe to Australia
// and back (Lemmy's #4623 measured ~0.5 s round trips between continents).
const farDelay = 200 * time.Millisecond

// far is issue 16's measurement: one registration to a receiver 200 ms
// away, at windows 1, 4 and 16 (and 16 on the daemon's default per-host
// cap, which a window cannot pass), then fan-out 1 on loopback with
// windows 1 and 16 against the bare client, all in one run.
func far(ctx context.Context, e *env, cfg config, rep *report) error {
	per := 32 // records per unit of window: each far case takes about 32 round trips
	loopN := 20_000
	if cfg.quick {
		per, loopN = 16, 5_000
	}
	if cfg.farLoopN > 0 {
		loopN = cfg.farLoopN
	}
	cases := []farCase{
		{window: 1, perHost: store.MaxWindow, delay: farDelay, n: per},
		{window: 4, perHost: store.MaxWindow, delay: farDelay, n: 4 * per},
		{window: 16, perHost: store.MaxWindow, delay: farDelay, n: 16 * per},
		{window: 16, perHost: push.DefaultMaxPerHost, delay: farDelay, n: 4 * per},
	}
	loop := []farCase{
		{window: 1, perHost: store.MaxWindow, n: loopN},
		{window: 16, perHost: store.MaxWindow, n: loopN},
		{window: 16, perHost: store.MaxWindow, n: loopN, page: 2048},
	}
	switch cfg.farCases {
	case "far":
		loop = nil
	case "loopback":
		cases = nil
	case "loopback16":
		cases, loop = nil, loop[1:2]
	}
	cases, loop = withBaseline(cfg, cases), withBaseline(cfg, loop)
	res := make([]result, len(cases))
	loopRes := make([]result, len(loop))
	var bare result
	for run := 1; run <= cfg.runs; run++ {
		for i, c := range cases {
			logf("far receiver run %d/%d: %s, %v away, %d records", run, cfg.runs, c.name(), c.delay, c.n)
			d, err := farRun(ctx, e, cfg, run, c)
			if err != nil {
				return fmt.Errorf("far %s: %w", c.name(), err)
			}
			logf("  %.1f records/s", float64(d.deliveries)/d.took.Seconds())
			res[i].add(d)
		}
		if len(loop) > 0 {
			logf("fan-out 1 on loopback run %d/%d: bare client, %d requests", run, cfg.runs, loopN)
			d, err := bareRun(ctx, e, cfg, fanoutCase{R: 1, E: loopN}, run)
			if err != nil {
				return fmt.Errorf("bare client: %w", err)
			}
			logf("  %.0f/s", float64(d.deliveries)/d.took.Seconds())
			bare.add(d)
		}
		for i, c := range loop {
			logf("fan-out 1 on loopback run %d/%d: herald %s, %d records", run, cfg.runs, c.name(), c.n)
			d, err := farRun(ctx, e, cfg, run, c)
			if err != nil {
				return fmt.Errorf("loopback %s: %w", c.name(), err)
			}
			logf("  %.0f records/s", float64(d.deliveries)/d.took.Seconds())
			loopRes[i].add(d)
		}
		logf("load average %s", loadavg())
	}

	rep.printf("### Far receivers: windows\n\n")
	if cfg.baseline != "" {
		rep.printf("Each case is run by this tree's herald and, just before it, by the baseline `%s` (-herald-baseline).\n\n", cfg.baseline)
	}
	if len(cases) > 0 {
		rep.printf("One webhook registration with window W (`push.Registration.Window`) to a route of the receiver that answers %v after it read the request (`?delay=`), the records appended before `herald run --namespaces webhook --max-in-flight %d --max-per-host H --every %v` starts; records/s = records / (process start → the receiver's last answer). Each case on a fresh database, the cases one after the other in each run; %d runs.\n\n",
			farDelay, cfg.conc, cfg.heraldEvery, cfg.runs)
		rep.printf("| herald | window | --max-per-host | records | records/s | × window 1 | ideal (W / %v) | most in flight at the receiver | start → first answer ms | duplicates, short |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n", farDelay)
		for i, c := range cases {
			first := 0
			if c.baseline != cases[0].baseline {
				first = 1
			}
			rep.printf("| %s | %d | %d | %d | %s | %s | %s | %s | %s | %d, %d |\n", c.binary(), c.window, c.perHost, c.n, res[i].perSec.cell(1), ratio(res[i].perSec, res[first].perSec),
				fmtNum(float64(min(c.window, c.perHost))/farDelay.Seconds(), 0), res[i].mostInFlight.cell(0), res[i].firstMS.cell(0), res[i].dups, res[i].short)
		}
	}
	if len(loop) > 0 {
		rep.printf("\nFan-out 1 on loopback (no delay): %d records of one stream to one registration, against the bare client (%d goroutines POSTing the same number of requests to one route with keep-alive, no database):\n\n", loopN, cfg.conc)
		rep.printf("| sender | deliveries/s | × bare client | most in flight at the receiver | CPU s sender / PostgreSQL / receiver | duplicates, short |\n|---|---:|---:|---:|---|---|\n")
		rep.printf("| bare client | %s | 1 | %s | %s / – / %s | %d, %d |\n", bare.perSec.cell(0), bare.mostInFlight.cell(0), fmtNum(bare.workerCPU.median(), 1), fmtNum(bare.recvCPU.median(), 1), bare.dups, bare.short)
		for i, c := range loop {
			x := loopRes[i]
			sender := fmt.Sprintf("herald, window %d", c.window)
			if c.page > 0 {
				sender += fmt.Sprintf(", --drain-page %d", c.page)
			}
			if cfg.baseline != "" {
				sender += " (" + c.binary() + ")"
			}
			rep.printf("| %s | %s | %s | %s | %s / %s / %s | %d, %d |\n", sender, x.perSec.cell(0), ratio(x.perSec, bare.perSec), x.mostInFlight.cell(0),
				fmtNum(x.workerCPU.median(), 1), fmtNum(x.pgCPU.median(), 1), fmtNum(x.recvCPU.median(), 1), x.dups, x.short)
		}
	}
	rep.printf("\n")
	return nil
}

// farRun delivers c.n records to one registration with window c.window.
func farRun(ctx context.Context, e *env, cfg config, run int, c farCase) (fanoutRun, error) {
	g := fmt.Sprintf("far-w%d-h%d-d%d-n%d-p%d-b%t-run%d", c.window, c.perHost, c.delay.Milliseconds(), c.n, c.page, c.baseline, run)
	db := fmt.Sprintf("far_w%d_h%d_d%d_p%d_%d", c.window, c.perHost, c.delay.Milliseconds(), c.page, run)
	dbURL, err := e.createDB(ctx, db)
	if err != nil {
		return fanoutRun{}, err
	}
	defer e.dropDB(ctx, db)
	url := fmt.Sprintf("%s/d/%s/0", e.recvURL, g)
	if c.delay > 0 {
		url += "?delay=" + c.delay.String()
	}
	fc := fanoutCase{R: 1, E: c.n}
	if err := loadFanout(ctx, cfg, dbURL, fc, c.window, func(int) string { return url }); err != nil {
		return fanoutRun{}, err
	}
	s1, err := e.snap(ctx, dbURL, db)
	if err != nil {
		return fanoutRun{}, err
	}
	args := []string{"run", "--database", dbURL, "--namespaces", "webhook", "--allow-http", "--allow-private-network",
		"--metrics-addr", "", "--admin-addr", "", "--max-in-flight", strconv.Itoa(cfg.conc), "--max-per-host", strconv.Itoa(c.perHost),
		"--every", cfg.heraldEvery.String()}
	if c.page > 0 {
		args = append(args, "--drain-page", strconv.Itoa(c.page))
	}
	bin := e.herald
	if c.baseline {
		bin = cfg.baseline
	}
	return deliverWith(ctx, e, fanoutRun{}, "herald-far", bin, args, nil, g, fc, dbURL, db, s1, s1)
}
