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
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

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

// producerCases are 1 and 32 writers, one hot stream and 1,000 streams.
var producerCases = []producerCase{{1, 1}, {1000, 1}, {1, 32}, {1000, 32}}

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
	// "autovacuum", "other" (walwriter, checkpointer, background writer,
	// the other background processes and the other client backends, such
	// as the sampler's and the snapshots'), and "bench" (this process: the
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
	waits string                   // sampleWaits' summary
	cpu   map[string]time.Duration // sampleWaits' CPU by role
	n     int64
	took  time.Duration
	p99   float64 // ms
	steps int64
}

// count puts lats, the latencies of the calls writeFor made in d, into
// out; it returns err (writeFor's, or what else failed), or an error naming
// what a call is when none finished.
func (out *produced) count(lats []time.Duration, d time.Duration, what string, err error) error {
	if err == nil && len(lats) == 0 {
		err = fmt.Errorf("no %s finished in %v", what, d)
	}
	if err != nil {
		return err
	}
	slices.Sort(lats)
	out.n = int64(len(lats))
	out.p99 = ms(lats[len(lats)*99/100])
	return nil
}

// How the application's transaction appends its record, if it does.
type appendVia int

const (
	viaNone     appendVia = iota // the bare transaction
	viaAppendTx                  // store/postgres AppendTx
	viaSQL                       // SELECT herald_append(…): no herald Go code
	viaPlainRow                  // a second plain INSERT of a record-sized row: the floor of any design that writes the record in the caller's transaction
	viaPgQ                       // SELECT pgq.insert_event(…) (the pgq extension)
	viaRiver                     // River's InsertTx of one job
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
		rc       *river.Client[pgx.Tx]
		steps    atomic.Int64
		stop     = func() {}
		seqDone  = make(chan struct{})
		seqErr   atomic.Value
	)
	close(seqDone)
	if withHerald {
		if st, err = postgres.New(ctx, pool, postgres.WithKeyring(keyring)); err != nil {
			return out, err
		}
		defer st.Close()
	}
	if via == viaRiver {
		if rc, err = river.NewClient(riverpgxv5.New(pool), &river.Config{}); err != nil { // insert-only, River's defaults
			return out, err
		}
	}
	if withHerald && sequencer {
		var opts []postgres.Option
		if seqInterval > 0 {
			opts = append(opts, postgres.WithSequencerInterval(seqInterval))
		}
		if seqr, err = postgres.Open(ctx, withApp(withPool(dbURL, 2), appSequencer), append(opts, postgres.WithKeyring(keyring))...); err != nil {
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
			case viaPgQ:
				_, err := tx.Exec(ctx, `SELECT pgq.insert_event('orders', 'order.updated', $3, $1, $2, null, null)`, stream, id, string(wire.Payload(k)))
				return err
			case viaRiver:
				_, err := rc.InsertTx(ctx, tx, wire.DeliveryArgs{URL: "http://127.0.0.1/" + stream, EventID: id, Payload: wire.Payload(k)}, nil)
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
	out.steps = steps.Load()
	return out, out.count(lats, d, "transaction", firstErr)
}
