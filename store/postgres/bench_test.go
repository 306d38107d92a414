package postgres_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// Benchmarks of the PostgreSQL store; BENCHMARKS.md at the repository root
// reports them. They run against the pgtest server (fsync off unless
// HERALD_TEST_PG_FSYNC=on), so they measure locking and round trips, and
// with fsync on, the commit's flush too.

// benchStore opens a store on a fresh, migrated database with a pool of
// conns connections.
func benchStore(b *testing.B, conns int) *postgres.Store {
	return openStore(b, withConns(b, migratedURL(b), conns))
}

// BenchmarkAppend appends one record per transaction (Append: BEGIN, two
// round trips, COMMIT) from several writers, to one hot stream or spread
// over 1,000 streams. It reports appends per second.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct{ writers, streams int }{{1, 1}, {8, 1}, {32, 1}, {32, 1000}} {
		name := fmt.Sprintf("streams=%d/writers=%d", c.streams, c.writers)
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, c.writers+2)
			payload := []byte(`{"type":"Create","object":{"content":"a short note of about a hundred bytes, as fediverse posts go"}}`)
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, c.writers)
			b.ResetTimer()
			start := time.Now()
			for w := range c.writers {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						stream := fmt.Sprintf("stream/%d", (int(i)+w)%c.streams)
						e := journal.Entry{ID: fmt.Sprintf("%s-%d", name, i), Kind: "Create", Payload: payload}
						if _, err := s.Append(context.Background(), stream, e); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
		})
	}
}

// BenchmarkAppendTx runs the producer's transaction on one connection:
// BEGIN, one AppendTx of one record (1,000 streams in turn),
// COMMIT, no sequencer. Besides ns/op and allocs/op it reports the CPU this
// process spent per transaction (client-µs/op, from getrusage: the Go side
// of AppendTx and pgx's, without the server's).
func BenchmarkAppendTx(b *testing.B) {
	s := benchStore(b, 2)
	ctx := context.Background()
	conn, err := s.Pool().Acquire(ctx)
	require.NoError(b, err)
	defer conn.Release()
	payload := []byte(`{"type":"Create","object":{"content":"a short note of about a hundred bytes, as fediverse posts go"}}`)
	ids := make([]string, b.N)
	streams := make([]string, 1000)
	for i := range ids {
		ids[i] = "tx-" + strconv.Itoa(i)
	}
	for i := range streams {
		streams[i] = "stream/" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	for i := range b.N {
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.AppendTx(ctx, tx, streams[i%len(streams)], journal.Entry{ID: ids[i], Kind: "Create", Payload: payload}); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "client-µs/op")
}

// processCPU is the user and system CPU this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppendBatch appends batches of 1,000 records, one transaction
// each, to one stream. It reports records per second.
func BenchmarkAppendBatch(b *testing.B) {
	const size = 1000
	s := benchStore(b, 4)
	payload := []byte(`{"type":"Create","object":{"content":"a short note of about a hundred bytes, as fediverse posts go"}}`)
	batch := make([]journal.Entry, size)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		for j := range batch {
			batch[j] = journal.Entry{ID: fmt.Sprintf("b%d-%d", i, j), Kind: "Create", Payload: payload}
		}
		if _, err := s.Append(context.Background(), "bulk", batch...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*size)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkDue measures one Due (claim) with many registrations of which
// none or 100 have work. Each iteration is at an instant past the previous
// leases, so the same 100 are claimed again.
func BenchmarkDue(b *testing.B) {
	cases := []struct{ registrations, due int }{
		{100_000, 0}, {100_000, 100}, {1_000_000, 0},
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("registrations=%d/due=%d", c.registrations, c.due), func(b *testing.B) {
			const perStream = 10
			ctx := b.Context()
			s := benchStore(b, 4)
			seedIdle(b, s, c.registrations/perStream, perStream)
			q := store.DueQuery{Limit: 256, Namespace: "webhook", Owner: "bench"}
			q.At, q.LeaseUntil = at(0), at(60)
			for pending := 1; pending > 0; { // sweeps clear the markers the seed set
				_, err := s.Due(ctx, q)
				require.NoError(b, err)
				require.NoError(b, s.Pool().QueryRow(ctx, `SELECT count(*) FROM herald_stream WHERE pending`).Scan(&pending))
			}
			// The steady state: autovacuum has removed the index entries the
			// cleared markers left behind.
			_, err := s.Pool().Exec(ctx, `VACUUM (ANALYZE) herald_stream, herald_registration`)
			require.NoError(b, err)
			for i := range c.due / perStream {
				_, err = s.Append(ctx, fmt.Sprintf("stream/%d", i*97%(c.registrations/perStream)), entry(fmt.Sprintf("new-%d", i)))
				require.NoError(b, err)
			}
			benchDue(b, s, q, c.due)
		})
	}
}

// BenchmarkFanoutClaims serves one record to n registrations of one stream
// on n/10 hosts (10 a host, adjacent in key order, as a fediverse audience
// is), claiming as Worker.Run does: Limit 32, MaxPerHost 4, Busy the claims
// still held, each Advance'd past the record, until every registration is
// served. A claim holds at most 32 (two claims' worth) unadvanced at
// once, the oldest advanced first (seedAudience says the rest). Each op appends one
// record (not timed) and serves it; it reports the store's time per
// delivery (Due and Advance; Due's alone), and claims per 1,000 deliveries. Issue 37: the
// cost per delivery must not grow with n.
func BenchmarkFanoutClaims(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("registrations=%d", n), func(b *testing.B) {
			ctx := b.Context()
			s := benchStore(b, 4)
			seedAudience(b, s, n)
			var took, due time.Duration
			claims, when := 0, at(0)
			for i := range b.N {
				_, err := s.Append(ctx, "actor/alice", entry(fmt.Sprintf("post-%d", i)))
				require.NoError(b, err)
				start := time.Now()
				claims += serveFanout(b, s, &when, &due, n)
				took += time.Since(start)
			}
			b.ReportMetric(float64(took.Microseconds())/float64(b.N*n), "store-µs/delivery")
			b.ReportMetric(float64(due.Microseconds())/float64(b.N*n), "due-µs/delivery")
			b.ReportMetric(float64(claims)*1000/float64(b.N*n), "claims/1000deliveries")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// serveFanout claims and advances as BenchmarkFanoutClaims says until n
// registrations were served, one second of *when a claim, adds the time
// spent in Due to *due, and returns the claims made.
func serveFanout(b *testing.B, s *postgres.Store, when *time.Time, due *time.Duration, n int) int {
	const limit, perHost, holding = 32, 4, 32
	ctx := b.Context()
	var held []store.Status
	busy := map[string]int{}
	advance := func(keep int) {
		for len(held) > keep {
			st := held[0]
			held = held[1:]
			if err := s.Advance(ctx, st.Claim(), st.Head+1); err != nil {
				b.Fatal(err)
			}
			busy[st.Host()]--
			n--
		}
	}
	claims := 0
	for n > 0 {
		*when = when.Add(time.Second)
		q := store.DueQuery{At: *when, Limit: limit, Namespace: "activitypub", Owner: fmt.Sprintf("bench#%d", claims),
			LeaseUntil: when.Add(time.Hour), MaxPerHost: perHost, Busy: maps.Clone(busy)}
		start := time.Now()
		batch, err := s.Due(ctx, q)
		*due += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		claims++
		for _, st := range batch.Registrations {
			if busy[st.Host()]++; busy[st.Host()] > perHost {
				b.Fatalf("host %s has %d claims, over the cap %d", st.Host(), busy[st.Host()], perHost)
			}
		}
		held = append(held, batch.Registrations...)
		if len(batch.Registrations) == 0 && len(held) == 0 {
			b.Fatalf("nothing claimed, nothing held, %d registrations not served", n)
		}
		keep := holding
		if len(batch.Registrations) == 0 {
			keep = 0
		}
		advance(keep)
	}
	return claims
}

// BenchmarkDueHeldHost measures what a down host costs a claim: 100 due
// registrations of a healthy host beside 0, 1,000 or 10,000 lagging
// registrations held for a down host (its probe not due). The held ones
// keep their streams pending, so Due reads them (and leaves them: the host
// is down); it writes nothing for them. It reports ns per Due.
func BenchmarkDueHeldHost(b *testing.B) {
	for _, held := range []int{0, 1_000, 10_000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			ctx := b.Context()
			s := benchStore(b, 4)
			seed := func(prefix, host string, n int) {
				_, err := s.Pool().Exec(ctx, `
					INSERT INTO herald_stream (stream, head, pending)
					SELECT $1 || i, 1, true FROM generate_series(0, $2::int - 1) AS i`, prefix, (n+9)/10)
				require.NoError(b, err)
				_, err = s.Pool().Exec(ctx, `
					INSERT INTO herald_registration (stream, id, namespace, url, host, next_seq, next_attempt_at)
					SELECT $1 || (n / 10), 'r' || (n % 10), 'webhook', 'https://' || $2 || '/' || n, $2 || ':443', 1, '2000-01-01 00:00:00+00'
					FROM generate_series(0, $3::int - 1) AS n`, prefix, host, n)
				require.NoError(b, err)
			}
			seed("ok/", "ok.example", 100)
			if held > 0 {
				seed("held/", "down.example", held)
			}
			_, err := s.Pool().Exec(ctx, `INSERT INTO herald_host (host, state, since, failures, next_probe_at)
				VALUES ('down.example:443', 'down', '2000-01-01', 3, '2999-01-01')`)
			require.NoError(b, err)
			_, err = s.Pool().Exec(ctx, `VACUUM (ANALYZE) herald_stream, herald_registration, herald_host`)
			require.NoError(b, err)
			benchDue(b, s, store.DueQuery{Limit: 256, Namespace: "webhook", Owner: "bench"}, 100) // the healthy host's
		})
	}
}

// benchDue times Due, each at an instant past the leases taken before, and
// fails unless it claims want registrations.
func benchDue(b *testing.B, s *postgres.Store, q store.DueQuery, want int) {
	b.ResetTimer()
	for i := range b.N {
		q.At = at(61 * (i + 1))
		q.LeaseUntil = q.At.Add(time.Minute)
		batch, err := s.Due(b.Context(), q)
		if err != nil {
			b.Fatal(err)
		}
		if len(batch.Registrations) != want {
			b.Fatalf("claimed %d, want %d", len(batch.Registrations), want)
		}
	}
}

// BenchmarkCursorSaves saves the cursors of 64 turns that end together, as
// a worker's group commit does (AdvanceBatch: one round trip, one commit)
// and as 64 Advance calls at once over the pool's 4 connections do (one
// commit each). Each op claims 64 registrations of one
// stream (not timed) and saves each one record further; it reports saves
// per second.
func BenchmarkCursorSaves(b *testing.B) {
	for _, batched := range []bool{false, true} {
		b.Run(fmt.Sprintf("batched=%v", batched), func(b *testing.B) {
			s := benchStore(b, 4)
			ctx := context.Background()
			const regs, turns = 1000, 64
			fanOut(b, s, "fanout", regs, 200)
			when := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
			var took time.Duration
			for i := range b.N {
				when = when.Add(2 * time.Minute) // every lease of the last op has expired
				saves := make([]store.CursorSave, turns)
				for j, st := range claim(b, s, when, fmt.Sprintf("o%d", i), turns, turns) {
					saves[j] = store.CursorSave{Claim: st.Claim(), NextSeq: min(st.NextSeq+1, st.Head)} // one record, leaving work
				}
				start := time.Now()
				if batched {
					errs, err := s.AdvanceBatch(ctx, saves)
					require.NoError(b, err)
					for _, err := range errs {
						require.NoError(b, err)
					}
				} else {
					var wg sync.WaitGroup
					errs := make([]error, turns)
					for j, sv := range saves {
						wg.Go(func() { errs[j] = s.Advance(ctx, sv.Claim, sv.NextSeq) })
					}
					wg.Wait()
					for _, err := range errs {
						require.NoError(b, err)
					}
				}
				took += time.Since(start)
			}
			b.ReportMetric(float64(b.N*turns)/took.Seconds(), "saves/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkFanoutStoreCalls counts what a worker asks of the store to serve
// fan-out 1,000 (20 records to 1,000 registrations of one stream: 1,000
// turns) under Run, with MaxInFlight 16, 64 or 256 and a receiver that
// accepts at once: claims (Due), journal reads that reach the store, and
// cursor commits (plain Advance calls and AdvanceBatch statements), each
// per 1,000 turns. Run with -benchtime 1x: each op sets up its own
// database.
func BenchmarkFanoutStoreCalls(b *testing.B) {
	for _, conc := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("in_flight=%d", conc), func(b *testing.B) {
			var calls callCounter
			for range b.N {
				s := benchStore(b, 4)
				fanOut(b, s, "fanout", 1000, 20)
				calls.Store = s
				runFanout(b, &calls, newOrderReceiver(20000), conc)
			}
			per := func(n *atomic.Int64) float64 { return float64(n.Load()) / float64(b.N) }
			b.ReportMetric(per(&calls.due), "claims/1000turns")
			b.ReportMetric(per(&calls.reads), "reads/1000turns")
			b.ReportMetric(per(&calls.advances)+per(&calls.batches), "cursor_commits/1000turns")
			b.ReportMetric(per(&calls.batched)/max(per(&calls.batches), 1), "saves/batch")
			b.ReportMetric(0, "ns/op")
		})
	}
}
