// Command bench measures herald against River (the Go job queue a user would
// pick instead) and against the machine's own limit (a bare HTTP client), on
// the same PostgreSQL, the same receiver and the same machine, in one run,
// and writes the tables as markdown (issue 9; BENCHMARKS.md shows a run).
//
//	cd bench && go run . [-quick] [-runs 3] [-out results.md] [-only fanout,producers,parts,httpappend,appends,idle,latency,silent,scaleout,prune,far,audience,slots]
//	                     [-fanout-r 1000] [-fanout-concurrency 16,64,256] [-fanout-cpuprofile DIR]
//	                     [-far-cases loopback] [-far-loop-n 10000] [-herald-baseline ../../herald-main]
//	                     [-lat-intervals 0,5ms] [-lat-statements]
//	                     [-stores sqlite,postgres] [-audience-n 1000,10000] [-audience-for 120s] [-audience-cpuprofile DIR]
//	                     [-slots-k 20,100] [-slots-for 30s]
//
// audience and slots (issue 37) run only when -only names them.
//
// It starts a throwaway PostgreSQL through herald's test harness
// (internal/pgtest) with fsync, synchronous_commit and full_page_writes on,
// builds and starts the receiver (cmd/receiver), the herald daemon
// (cmd/herald: herald run) and the River worker (cmd/riverworker) as
// separate processes on loopback, and stops them all before it exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store/postgres"
)

type config struct {
	quick           bool
	runs            int
	conc            int
	out             string
	only            map[string]bool
	keep            bool
	riverCool       time.Duration
	heraldEvery     time.Duration
	fanout          []fanoutCase
	appendFor       time.Duration
	producerFor     time.Duration
	idleRegs        int
	idleSweeps      int
	latRate         int
	latFor          time.Duration
	latStreams      int
	latAppenders    int
	producers       int
	appendCases     []appendCase
	fanoutConcs     []int
	silentFor       time.Duration
	scaleRegs       int
	scaleRecords    int
	pruneRecords    int
	farCases        string          // far: "all", "far" (200 ms away), "loopback" (fan-out 1) or "loopback16" (its window 16 case alone)
	farLoopN        int             // far: records of each loopback case (0: the mode's)
	baseline        string          // a second herald binary, run beside the built one in the fanout, far and latency workloads
	fanoutProfile   string          // fanout: a directory for the herald daemons' CPU profiles (empty: none)
	latSeqEvery     []time.Duration // latency: the daemon's --sequencer-interval values (0: its default)
	latStatements   bool            // latency: count statements with pg_stat_statements and print them
	stores          []string        // audience, slots: the stores to run on (sqlite, postgres)
	audienceN       []int           // audience: the numbers of inboxes
	audienceFor     time.Duration   // audience: each case's bound from the append
	audienceProfile string          // audience: a directory for the measured daemon's CPU profiles (empty: none)
	audienceHeld    bool            // audience: the actor's key held once (herald keys add), registrations naming its key id only
	slotsK          []int           // slots: the numbers of slow registrations
	slotsFor        time.Duration   // slots: how long the healthy registration gets appends
}

// keyring seals the registrations' configs of every store the benchmarks
// open, and of the herald processes they start (HERALD_KEYRING), as
// PostgreSQL needs to store a secret.
var keyring = seal.Generate()

func main() {
	os.Setenv("HERALD_KEYRING", string(keyring.Marshal()))
	var (
		cfg          config
		only         string
		fanoutR      string
		concs        string
		fanoutE      int
		latIntervals string
		stores       string
		audienceN    string
		slotsK       string
	)
	flag.BoolVar(&cfg.quick, "quick", false, "small sizes and one run (a few minutes), to check that everything works")
	flag.IntVar(&cfg.runs, "runs", 3, "runs of each measurement (the tables give the median and min–max); -quick sets 1 unless given")
	flag.IntVar(&cfg.conc, "concurrency", 16, "deliveries in flight: herald --max-in-flight, River MaxWorkers, bare client goroutines")
	flag.StringVar(&cfg.out, "out", "", "also write the tables to this file")
	flag.StringVar(&only, "only", "fanout,producers,httpappend,appends,idle,latency,silent,scaleout,prune,far", "workloads to run, comma-separated")
	flag.DurationVar(&cfg.producerFor, "producer-for", 3*time.Second, "duration of each case of the producers and parts workloads")
	flag.IntVar(&fanoutE, "fanout-e", 0, "fan-out: events per case instead of the mode's (0: the mode's)")
	flag.StringVar(&concs, "fanout-concurrency", "", "fan-out: run every case at each of these concurrencies, comma-separated (default: -concurrency), and compare the systems best against best")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (binaries, process logs)")
	flag.DurationVar(&cfg.riverCool, "river-fetch-cooldown", time.Millisecond, "River FetchCooldown (River's default, 100ms, caps a queue at MaxWorkers jobs per 100 ms)")
	flag.IntVar(&cfg.latAppenders, "lat-appenders", 16, "goroutines (and connections) issuing the paced appends of the latency workload")
	flag.StringVar(&fanoutR, "fanout-r", "", "fan-out cases to run, by R, comma-separated (default: all of 1, 100, 1000)")
	flag.DurationVar(&cfg.heraldEvery, "herald-every", time.Second, "herald run --every (its default, 1s)")
	flag.StringVar(&cfg.farCases, "far-cases", "all", "far: the cases to run: all, far (the receiver 200 ms away), loopback (fan-out 1 against the bare client) or loopback16 (its window 16 case alone)")
	flag.IntVar(&cfg.farLoopN, "far-loop-n", 0, "far: records of each loopback case (0: 20,000, or 5,000 with -quick)")
	flag.StringVar(&cfg.baseline, "herald-baseline", "", "fanout, far and latency: path of another herald binary (e.g. built from main) run beside this tree's, alternating, case by case")
	flag.StringVar(&cfg.fanoutProfile, "fanout-cpuprofile", "", "fanout: write each herald daemon's CPU profile (HERALD_CPUPROFILE) into this directory, one file a run")
	flag.StringVar(&latIntervals, "lat-intervals", "5ms,0,20ms", "latency: the daemon's --sequencer-interval values to run, comma-separated (0: its default)")
	flag.StringVar(&stores, "stores", "sqlite,postgres", "audience, slots: the stores to run on, comma-separated (sqlite, postgres)")
	flag.StringVar(&audienceN, "audience-n", "1000,10000", "audience: the numbers of inboxes (10 a host), comma-separated; 100000 holds 10,000 listeners and takes long")
	flag.DurationVar(&cfg.audienceFor, "audience-for", 120*time.Second, "audience: each case's bound from the append (it ends earlier when every healthy and slow inbox had the post); at least 60s")
	flag.BoolVar(&cfg.audienceHeld, "audience-held-key", false, "audience: hold the actor's key once (herald keys add) and register the inboxes with its key_id only, instead of a private_key in every config")
	flag.StringVar(&cfg.audienceProfile, "audience-cpuprofile", "", "audience: write the measured daemon's CPU profile (HERALD_CPUPROFILE) into this directory, one file a case")
	flag.StringVar(&slotsK, "slots-k", "20,100", "slots: the numbers of slow registrations, comma-separated (the shared-host case runs after them)")
	flag.DurationVar(&cfg.slotsFor, "slots-for", 30*time.Second, "slots: how long the healthy registration gets a record every 0.5 s")
	flag.BoolVar(&cfg.latStatements, "lat-statements", false, "latency, audience: load pg_stat_statements into the cluster and print, for each (PostgreSQL) case, what PostgreSQL spent on each statement (it slows every statement a little)")
	flag.Parse()
	cfg.only = map[string]bool{}
	for w := range strings.SplitSeq(only, ",") {
		w = strings.TrimSpace(w)
		if !slices.Contains([]string{"fanout", "producers", "parts", "httpappend", "appends", "idle", "latency", "silent", "scaleout", "prune", "far", "audience", "slots"}, w) {
			fmt.Fprintf(os.Stderr, "bench: -only: unknown workload %q (fanout, producers, parts, httpappend, appends, idle, latency, silent, scaleout, prune, far, audience, slots)\n", w)
			os.Exit(2)
		}
		cfg.only[w] = true
	}
	if cfg.runs < 1 || cfg.conc < 1 {
		fmt.Fprintln(os.Stderr, "bench: -runs and -concurrency must be at least 1")
		os.Exit(2)
	}
	if !slices.Contains([]string{"all", "far", "loopback", "loopback16"}, cfg.farCases) {
		fmt.Fprintf(os.Stderr, "bench: -far-cases %q: it must be all, far, loopback or loopback16\n", cfg.farCases)
		os.Exit(2)
	}
	if cfg.farLoopN < 0 {
		fmt.Fprintf(os.Stderr, "bench: -far-loop-n %d: it must be 0 (the mode's) or more\n", cfg.farLoopN)
		os.Exit(2)
	}
	if cfg.baseline != "" {
		if st, err := os.Stat(cfg.baseline); err != nil || st.IsDir() {
			fmt.Fprintf(os.Stderr, "bench: -herald-baseline %q: not a binary (%v)\n", cfg.baseline, err)
			os.Exit(2)
		}
	}
	for v := range strings.SplitSeq(latIntervals, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 || (d > 0 && d < postgres.MinSequencerInterval) {
			fmt.Fprintf(os.Stderr, "bench: -lat-intervals: %q is not 0 or a duration of at least %v\n", v, postgres.MinSequencerInterval)
			os.Exit(2)
		}
		cfg.latSeqEvery = append(cfg.latSeqEvery, d)
	}
	for v := range strings.SplitSeq(stores, ",") {
		v = strings.TrimSpace(v)
		if !slices.Contains(storeKinds, v) {
			fmt.Fprintf(os.Stderr, "bench: -stores: %q is not sqlite or postgres\n", v)
			os.Exit(2)
		}
		cfg.stores = append(cfg.stores, v)
	}
	var ok bool
	if cfg.audienceN, ok = counts(audienceN, 10, 256*hostsPerOctet*inboxesPerHost); !ok {
		fmt.Fprintf(os.Stderr, "bench: -audience-n %q: each must be a number of inboxes from 10 to %d\n", audienceN, 256*hostsPerOctet*inboxesPerHost)
		os.Exit(2)
	}
	if cfg.slotsK, ok = counts(slotsK, 1, 256*hostsPerOctet-1); !ok {
		fmt.Fprintf(os.Stderr, "bench: -slots-k %q: each must be a number of registrations from 1 to %d\n", slotsK, 256*hostsPerOctet-1)
		os.Exit(2)
	}
	if cfg.audienceFor < time.Minute || cfg.slotsFor < healthyEvery {
		fmt.Fprintf(os.Stderr, "bench: -audience-for (%v) must be at least 1m and -slots-for (%v) at least %v\n", cfg.audienceFor, cfg.slotsFor, healthyEvery)
		os.Exit(2)
	}
	if cfg.producerFor <= 0 {
		fmt.Fprintf(os.Stderr, "bench: -producer-for %v must be positive\n", cfg.producerFor)
		os.Exit(2)
	}
	cfg.producers = 16
	runsGiven := false
	flag.Visit(func(f *flag.Flag) { runsGiven = runsGiven || f.Name == "runs" })
	if cfg.quick && !runsGiven {
		cfg.runs = 1
	}
	// Each setting: its -quick value, then its full one.
	cfg.fanout = sized(cfg.quick, []fanoutCase{{R: 1, E: 5000}, {R: 100, E: 100}, {R: 1000, E: 20}},
		[]fanoutCase{{R: 1, E: 100_000}, {R: 100, E: 1000}, {R: 1000, E: 100}})
	cfg.appendFor = sized(cfg.quick, 2*time.Second, 5*time.Second)
	cfg.idleRegs, cfg.idleSweeps = sized(cfg.quick, 100_000, 1_000_000), sized(cfg.quick, 20, 50)
	cfg.latRate, cfg.latFor, cfg.latStreams = 1000, sized(cfg.quick, 10*time.Second, 30*time.Second), 100
	cfg.pruneRecords = sized(cfg.quick, 20_000, 200_000)
	cfg.silentFor = sized(cfg.quick, 10*time.Second, 30*time.Second)
	cfg.scaleRegs, cfg.scaleRecords = sized(cfg.quick, 128, 512), sized(cfg.quick, 5, 10)
	if fanoutE < 0 {
		fmt.Fprintln(os.Stderr, "bench: -fanout-e must not be negative")
		os.Exit(2)
	}
	for i := range cfg.fanout {
		if fanoutE > 0 {
			cfg.fanout[i].E = fanoutE
		}
	}
	cfg.fanoutConcs = []int{cfg.conc}
	if concs != "" {
		cfg.fanoutConcs = nil
		for c := range strings.SplitSeq(concs, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil || n < 1 || n > 1024 {
				fmt.Fprintf(os.Stderr, "bench: -fanout-concurrency: %q is not a concurrency from 1 to 1024\n", c)
				os.Exit(2)
			}
			cfg.fanoutConcs = append(cfg.fanoutConcs, n)
		}
	}
	if fanoutR != "" {
		var keep []fanoutCase
		for r := range strings.SplitSeq(fanoutR, ",") {
			i := slices.IndexFunc(cfg.fanout, func(c fanoutCase) bool { return strconv.Itoa(c.R) == strings.TrimSpace(r) })
			if i < 0 {
				fmt.Fprintf(os.Stderr, "bench: -fanout-r: no fan-out case with R=%s (1, 100, 1000)\n", r)
				os.Exit(2)
			}
			keep = append(keep, cfg.fanout[i])
		}
		cfg.fanout = keep
	}
	cfg.appendCases = []appendCase{
		{streams: 1, writers: 1, batch: 1}, {streams: 1, writers: 8, batch: 1}, {streams: 1, writers: 32, batch: 1},
		{streams: 1000, writers: 1, batch: 1}, {streams: 1000, writers: 8, batch: 1}, {streams: 1000, writers: 32, batch: 1},
		{streams: 1, writers: 1, batch: 100}, {streams: 1, writers: 1, batch: 1000},
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	started := time.Now()
	e, err := setup(ctx, cfg)
	if err != nil {
		return err
	}
	defer e.close()
	if cfg.latStatements {
		logf("restarting PostgreSQL with pg_stat_statements loaded (-lat-statements)")
		if err := preloadStmts(ctx, e); err != nil {
			return fmt.Errorf("-lat-statements: %w", err)
		}
	}
	if cfg.only["audience"] || cfg.only["slots"] {
		n, err := raiseFileLimit()
		if err != nil {
			return fmt.Errorf("raise the open files limit: %w", err)
		}
		logf("open files limit %d (the audience's hosts each hold a listener)", n)
	}
	rep := &report{}
	rep.header(e, cfg)
	if cfg.only["fanout"] {
		all := fanoutAt{}
		for _, conc := range cfg.fanoutConcs {
			c := cfg
			c.conc = conc
			res, err := fanout(ctx, e, c, rep)
			if err != nil {
				return fmt.Errorf("fan-out at concurrency %d: %w", conc, err)
			}
			all[conc] = res
		}
		if len(cfg.fanoutConcs) > 1 {
			reportBest(rep, cfg, all)
		}
	}
	for _, w := range []struct {
		name string
		run  func(context.Context, *env, config, *report) error
	}{{"producers", producers}, {"parts", parts}, {"httpappend", httpAppend}, {"appends", appends}, {"idle", idle},
		{"latency", latency}, {"silent", silentLatency}, {"scaleout", scaleOut}, {"prune", prune}, {"far", far},
		{"audience", audience}, {"slots", slots}} {
		if !cfg.only[w.name] {
			continue
		}
		logf("load average %s", loadavg())
		if err := w.run(ctx, e, cfg, rep); err != nil {
			return fmt.Errorf("%s: %w", w.name, err)
		}
	}
	rep.printf("\nThe whole run took %s; load average at the end %s.\n", time.Since(started).Round(time.Second), loadavg())
	return rep.write(cfg.out)
}

// counts parses a comma-separated list of integers from lo to hi.
func counts(s string, lo, hi int) ([]int, bool) {
	var out []int
	for v := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// sized is quick under -quick, full otherwise.
func sized[T any](isQuick bool, quick, full T) T {
	if isQuick {
		return quick
	}
	return full
}
