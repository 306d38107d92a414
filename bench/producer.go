package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldpush/herald/bench/internal/wire"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store/postgres"
)

// producerCase is writers goroutines running the application's
// transaction, each with one record for one of streams streams.
type producerCase struct{ streams, writers int }

func (c producerCase) String() string {
	return fmt.Sprintf("%d stream(s), %d writer(s)", c.streams, c.writers)
}

// producerCases are issue 15's: 1 and 32 writers, one hot stream and
// 1,000 streams.
var producerCases = []producerCase{{1, 1}, {1, 32}, {1000, 1}, {1000, 32}}

type producerResult struct {
	bareWaits, heraldWaits string // what the writers' backends were doing, from the last run
	bare, herald           sample // transactions/s
	bareP99, heraldP99     sample // ms per transaction
	bareWAL, heraldWAL     sample // WAL bytes per transaction
	unnumbered, seqSteps   sample // records without a seq when the writers stopped; sequencer steps
}

// producer measures what AppendTx costs the application: the same
// transaction (BEGIN; INSERT one row of its own; COMMIT) without and with
// one AppendTx, alternating within each run, with the sequencer running
// beside the writers as the daemon would run it.
func producer(ctx context.Context, e *env, cfg config, rep *report) error {
	res := make([]producerResult, len(producerCases))
	for run := 1; run <= cfg.runs; run++ {
		db := fmt.Sprintf("producer_%d", run)
		dbURL, err := e.createDB(ctx, db)
		if err != nil {
			return err
		}
		if _, err := postgres.MigrateUp(ctx, dbURL); err != nil {
			return err
		}
		if err := execOnce(ctx, dbURL, `CREATE TABLE app_order (id text PRIMARY KEY, body bytea NOT NULL)`); err != nil {
			return err
		}
		for i, c := range producerCases {
			r := &res[i]
			for _, withHerald := range []bool{false, true} {
				logf("producer %v, AppendTx %v, run %d/%d", c, withHerald, run, cfg.runs)
				s0, err := e.snap(ctx, dbURL, db)
				if err != nil {
					return err
				}
				mode := viaNone
				if withHerald {
					mode = viaAppendTx
				}
				out, err := produceFor(ctx, dbURL, c, mode, fmt.Sprintf("r%d-c%d-%v-", run, i, withHerald), cfg.producerFor)
				if err != nil {
					return fmt.Errorf("%v: %w", c, err)
				}
				s1, err := e.snap(ctx, dbURL, db)
				if err != nil {
					return err
				}
				d, err := e.diff(ctx, s0, s1)
				if err != nil {
					return err
				}
				rate, wal := float64(out.n)/out.took.Seconds(), float64(d.wal)/float64(out.n)
				if withHerald {
					r.heraldWaits = out.waits
					r.herald, r.heraldP99, r.heraldWAL = append(r.herald, rate), append(r.heraldP99, out.p99), append(r.heraldWAL, wal)
					r.unnumbered, r.seqSteps = append(r.unnumbered, float64(out.unnumbered)), append(r.seqSteps, float64(out.steps))
				} else {
					r.bareWaits = out.waits
					r.bare, r.bareP99, r.bareWAL = append(r.bare, rate), append(r.bareP99, out.p99), append(r.bareWAL, wal)
				}
				logf("  %.0f transactions/s, p99 %.1f ms, %.0f WAL B/transaction; backends: %s", rate, out.p99, wal, out.waits)
			}
		}
		e.dropDB(ctx, db)
	}
	rep.printf("### 3a. The producer's cost: the application's transaction with and without AppendTx\n\n")
	rep.printf("W goroutines (one connection each) run the application's transaction in a loop for %v per case: `BEGIN; INSERT INTO app_order (id, body) VALUES (…, %d bytes); COMMIT`, and the same with one `AppendTx` of a %d-byte record between the INSERT and the COMMIT (with 1,000 streams each transaction takes the next stream of a shared counter). The bare and the herald case alternate within each run, on the same database. Beside the herald case, one `RunSequencer` (its own pool of 2 connections, as `herald run` runs it) numbers the records; its writes are in the WAL figure, which is per transaction, after the sequencer caught up. Goal (issue 15): ≥ 0.8× at 32 writers, ≥ 0.7× at 1.\n\n",
		cfg.producerFor, wire.PayloadBytes, wire.PayloadBytes)
	rep.printf("| case | bare tx/s | with AppendTx tx/s | ratio | bare p99 ms | AppendTx p99 ms | WAL B/tx bare | WAL B/tx AppendTx | records left unnumbered at the stop | sequencer steps |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, c := range producerCases {
		r := res[i]
		rep.printf("| %v | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c, r.bare.cell(0), r.herald.cell(0), ratio(r.herald, r.bare),
			fmtNum(r.bareP99.median(), 1), fmtNum(r.heraldP99.median(), 1), r.bareWAL.cell(0), r.heraldWAL.cell(0),
			r.unnumbered.cell(0), r.seqSteps.cell(0))
	}
	rep.printf("\nWhat the database's client backends were doing (pg_stat_activity sampled every 10 ms during the last run's case, share of samples; \"CPU\" is active with no wait event: running or waiting for a core):\n\n")
	rep.printf("| case | bare | with AppendTx |\n|---|---|---|\n")
	for i, c := range producerCases {
		rep.printf("| %v | %s | %s |\n", c, res[i].bareWaits, res[i].heraldWaits)
	}
	rep.printf("\n")
	return nil
}

// The application_name of the benchmark's connections, so that the
// sampler can tell the writers' backends from the sequencer's.
const (
	appWriter    = "bench-writer"
	appSequencer = "bench-sequencer"
)

// withApp is dbURL with application_name set to name.
func withApp(dbURL, name string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// activity is what the server's processes did during a case.
type activity struct {
	waits string // the writers' (client backends but the sequencer's) wait events, top shares, e.g. "CPU 61%, IO:WALSync 20%"
	// CPU time of the server's processes by role: "writers", "sequencer",
	// "autovacuum", "other" (walwriter, checkpointer, background writer
	// and other background processes), and "bench" (this process: the
	// writers' and the sequencer's Go side, the sampler). A backend's CPU
	// counts from the first sample (0 for one that started after it) to
	// its last, so a process that exits loses at most one interval.
	cpu map[string]time.Duration
}

// sampleWaits tallies, every 10 ms until ctx ends, what the client
// backends of the database at dbURL are doing (other than idle and this
// sampler), and the CPU time (from /proc; none for a server on another
// machine) of every server process by role. The function it returns waits
// for the sampling to end (ctx) and returns the tally.
func sampleWaits(ctx context.Context, dbURL string) (func() activity, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	total := 0
	type proc struct {
		role        string
		first, last time.Duration
	}
	procs := map[int]*proc{}
	bench0 := cpuOf(os.Getpid(), false)
	var bench1 time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { bench1 = cpuOf(os.Getpid(), false) }()
		defer conn.Close(context.WithoutCancel(ctx))
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for ticks := 0; ; ticks++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := conn.Query(ctx, `SELECT pid, backend_type, coalesce(application_name, ''),
    datname = current_database() AND backend_type = 'client backend' AND state NOT IN ('idle')
        AND NOT (wait_event_type = 'Client' AND wait_event = 'ClientRead'),
    coalesce(wait_event_type || ':' || wait_event, 'CPU')
FROM pg_stat_activity WHERE pid <> pg_backend_pid()`)
			if err != nil {
				return
			}
			var (
				pid         int
				typ, app, w string
				active      bool
			)
			_, _ = pgx.ForEachRow(rows, []any{&pid, &typ, &app, &active, &w}, func() error {
				if active && app != appSequencer {
					counts[w]++
					total++
				}
				p := procs[pid]
				if p == nil {
					role := "other"
					switch {
					case app == appWriter:
						role = "writers"
					case app == appSequencer:
						role = "sequencer"
					case strings.HasPrefix(typ, "autovacuum"):
						role = "autovacuum"
					case typ == "client backend":
						role = "other clients"
					}
					p = &proc{role: role}
					if ticks > 0 {
						p.first = 0 // started during the case
					} else {
						p.first = cpuOf(pid, false)
					}
					procs[pid] = p
				}
				if c := cpuOf(pid, false); c > 0 {
					p.last = c
				}
				return nil
			})
		}
	}()
	return func() activity {
		<-done
		type kv struct {
			k string
			n int
		}
		var all []kv
		for k, n := range counts {
			all = append(all, kv{k, n})
		}
		slices.SortFunc(all, func(a, b kv) int { return b.n - a.n })
		var parts []string
		for i, e := range all {
			if i == 4 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %d%%", e.k, e.n*100/max(total, 1)))
		}
		a := activity{waits: "–", cpu: map[string]time.Duration{"bench": bench1 - bench0}}
		if len(parts) > 0 {
			a.waits = strings.Join(parts, ", ")
		}
		for _, p := range procs {
			a.cpu[p.role] += max(p.last-p.first, 0)
		}
		return a
	}, nil
}

func execOnce(ctx context.Context, dbURL, sql string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

type produced struct {
	waits      string                   // sampleWaits' summary
	cpu        map[string]time.Duration // sampleWaits' CPU by role
	n          int64
	took       time.Duration
	p99        float64 // ms
	unnumbered int64
	steps      int64
}

// How the application's transaction appends its record, if it does.
type appendVia int

const (
	viaNone     appendVia = iota // the bare transaction
	viaAppendTx                  // store/postgres AppendTx
	viaSQL                       // SELECT herald_append(…): no herald Go code
	viaPlainRow                  // a second plain INSERT of a record-sized row: the floor of any design that writes the record in the caller's transaction
)

// produceFor runs c's writers for d and, with herald, the sequencer beside
// them; when the writers stop it lets the sequencer finish (outside the
// timed part) and closes every connection.
func produceFor(ctx context.Context, dbURL string, c producerCase, via appendVia, prefix string, d time.Duration) (produced, error) {
	return produceWith(ctx, dbURL, c, via, true, 0, prefix, d)
}

// produceWith is produceFor, with the sequencer running beside the writers
// or not (sequencer false: the records stay without a seq, for the caller
// to number and measure), at its longest interval seqInterval while
// records come (0: the default; postgres.WithSequencerInterval).
func produceWith(ctx context.Context, dbURL string, c producerCase, via appendVia, sequencer bool, seqInterval time.Duration, prefix string, d time.Duration) (produced, error) {
	var out produced
	withHerald := via == viaAppendTx || via == viaSQL
	pool, err := pgxpool.New(ctx, withApp(withPool(dbURL, c.writers), appWriter))
	if err != nil {
		return out, err
	}
	defer pool.Close()
	var (
		st, seqr *postgres.Store
		steps    atomic.Int64
		stop     = func() {}
		seqDone  = make(chan struct{})
		seqErr   atomic.Value
	)
	close(seqDone)
	if withHerald {
		if st, err = postgres.New(ctx, pool); err != nil {
			return out, err
		}
		defer st.Close()
	}
	if withHerald && sequencer {
		var opts []postgres.Option
		if seqInterval > 0 {
			opts = append(opts, postgres.WithSequencerInterval(seqInterval))
		}
		if seqr, err = postgres.Open(ctx, withApp(withPool(dbURL, 2), appSequencer), opts...); err != nil {
			return out, err
		}
		defer seqr.Close()
		var sctx context.Context
		var cancel context.CancelFunc
		sctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop = cancel
		seqDone = make(chan struct{})
		l, err := seqr.Listen(ctx) // counts the steps that numbered records
		if err != nil {
			stop()
			return out, err
		}
		go func() {
			for {
				if _, err := l.Wait(sctx); err != nil {
					return
				}
				steps.Add(1)
			}
		}()
		go func() {
			defer close(seqDone)
			defer l.Close()
			seqr.RunSequencer(sctx, func(err error) { seqErr.Store(err) })
		}()
	}
	wctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	sampled, err := sampleWaits(wctx, dbURL)
	if err != nil {
		return out, err
	}
	lats, took, firstErr := writeFor(ctx, c.writers, d, func(w, k int, n int64) error {
		id := fmt.Sprintf("%sw%d-%d", prefix, w, k)
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO app_order (id, body) VALUES ($1, $2)`, id, wire.Payload(k)); err != nil {
				return err
			}
			stream := fmt.Sprintf("order/%d", n%int64(c.streams))
			switch via {
			case viaNone:
				return nil
			case viaPlainRow:
				_, err := tx.Exec(ctx, `INSERT INTO app_outbox (id, stream, kind, payload, digest, appended_at) VALUES ($1, $2, 'order.updated', $3, $4, now())`,
					id, stream, wire.Payload(k), outboxDigest[:])
				return err
			case viaSQL:
				_, err := tx.Exec(ctx, `SELECT herald_append($1, $2, 'order.updated', $3::bytea, 'application/json')`, stream, id, wire.Payload(k))
				return err
			}
			_, err := st.AppendTx(ctx, tx, stream, journal.Entry{
				ID: id, Kind: "order.updated", ContentType: "application/json", Payload: wire.Payload(k)})
			return err
		})
	})
	out.took = took
	stopSampling()
	act := sampled()
	out.waits, out.cpu = act.waits, act.cpu
	if st != nil {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM herald_record WHERE seq IS NULL`).Scan(&out.unnumbered); err != nil {
			return out, err
		}
	}
	stop()
	<-seqDone
	if st != nil && sequencer {
		if _, err := st.Sequence(ctx); err != nil { // what the runner left when it stopped
			return out, err
		}
	}
	if err, ok := seqErr.Load().(error); ok && firstErr == nil {
		firstErr = fmt.Errorf("sequencer: %w", err)
	}
	if firstErr == nil && len(lats) == 0 {
		firstErr = fmt.Errorf("no transaction finished in %v", d)
	}
	if firstErr != nil {
		return out, firstErr
	}
	slices.Sort(lats)
	out.n = int64(len(lats))
	out.p99 = ms(lats[len(lats)*99/100])
	out.steps = steps.Load()
	return out, nil
}
