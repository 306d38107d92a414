package postgres_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/storetest"
)

// seedIdle inserts, in bulk, streams stream/0… each with one record and
// perStream registrations whose cursor is past the head (idle), with every
// stream's pending marker set, as appends would have left them.
func seedIdle(t testing.TB, s *postgres.Store, streams, perStream int) {
	t.Helper()
	ctx := t.Context()
	_, err := s.Pool().Exec(ctx, `
		INSERT INTO herald_stream (stream, head, pending)
		SELECT 'stream/' || i, 1, true FROM generate_series(0, $1::int - 1) AS i`, streams)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `
		INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at)
		SELECT 'stream/' || i, 'rec/' || i, 'test.event', 'application/json', '{}', false, '\x00', now()
		FROM generate_series(0, $1::int - 1) AS i`, streams)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `
		INSERT INTO herald_seq (id, stream, seq) SELECT 'rec/' || i, 'stream/' || i, 1 FROM generate_series(0, $1::int - 1) AS i`, streams)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE herald_sequencer SET done = pg_current_snapshot()`)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `
		INSERT INTO herald_registration (stream, id, namespace, url, next_seq, next_attempt_at)
		SELECT 'stream/' || (n / $2::int), 'r' || (n % $2::int), 'webhook', 'https://receiver.example/' || n, 2, '0001-01-01 00:00:00+00'
		FROM generate_series(0, $1::int * $2::int - 1) AS n`, streams, perStream)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `ANALYZE herald_stream; ANALYZE herald_registration`)
	require.NoError(t, err)
}

// TestIdleRegistrationsAreNotRead is invariant 8: with 10,000 registrations
// at the head of their streams, a sweep reads no registration row (the
// query plans never execute a scan of herald_registration) and makes no
// journal read. The statistics are taken while every stream is pending, the
// worst case for the planner: the plans must not depend on them.
func TestIdleRegistrationsAreNotRead(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	seedIdle(t, s, 100, 100)

	reads := &atomic.Int64{}
	w, err := push.NewWorker(countingJournal{Journal: s, reads: reads}, s, acceptAll{}, storetest.PayloadProjection{}, push.WithOwner("w"))
	require.NoError(t, err)
	rep, err := w.RunOnce(ctx, at(0), 100) // clears the markers appends left
	require.NoError(t, err)
	require.Zero(t, rep.Registrations)
	rep, err = w.RunOnce(ctx, at(1), 100)
	require.NoError(t, err)
	require.Zero(t, rep.Registrations)
	require.Zero(t, reads.Load(), "no journal read for idle registrations")

	var pending int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM herald_stream WHERE pending`).Scan(&pending))
	require.Zero(t, pending, "a sweep clears the marker of streams with no lagging registration")

	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"clear candidates":   {postgres.SQLClearCandidates, nil},
		"pick":               {postgres.SQLPick, []any{"webhook", at(2), []string{}, 404}},
		"pick, a host held":  {postgres.SQLPick, []any{"webhook", at(2), []string{"d.example:443"}, 404}},
		"claim, none picked": {postgres.SQLClaim, []any{[]string{}, []string{}, "webhook", at(2), 100, "w", at(62)}},
		"unserved":           {postgres.SQLUnserved, []any{"webhook", at(2), []string{"d.example:443"}}},
		"sequencer probe":    {postgres.SQLAnyUnsequenced, nil},
	} {
		tx := plannerTx(t, s)
		walk(plan(t, tx, q.sql, q.args...), func(node map[string]any) {
			typ, _ := node["Node Type"].(string)
			require.NotEqual(t, "Seq Scan", typ, "%s: a sequential scan of %v", name, node["Relation Name"])
			if node["Relation Name"] == "herald_registration" && strings.HasSuffix(typ, "Scan") {
				if typ == "Tid Scan" { // by the ctids of the rows claimed: none
					require.Zero(t, node["Actual Rows"], "%s: %v", name, node)
				} else {
					require.Zero(t, node["Actual Loops"], "%s: registrations were scanned: %v", name, node)
				}
			}
		})
		require.NoError(t, tx.Rollback(ctx))
	}

	// The marker works: one append makes exactly that stream's
	// registrations due.
	_, err = s.Append(ctx, "stream/7", entry("new"))
	require.NoError(t, err)
	batch, err := s.Due(ctx, store.DueQuery{At: at(3), Limit: 1000, Namespace: "webhook", Owner: "w", LeaseUntil: at(63)})
	require.NoError(t, err)
	require.Len(t, batch.Registrations, 100)
	for _, st := range batch.Registrations {
		require.Equal(t, "stream/7", st.Stream)
	}
}

// TestClaimReadsWhatItTakes is issue 37's "nothing in a claim may cost in
// proportion to the registrations that are not served": with 10,000
// registrations of one stream lagging, on 1,000 hosts, a claim as Run makes
// (32, at most 4 a host, one host busy) takes the first that fit, in claim
// order, and its pick reads no more registration rows than its depth, plus
// one probe for the stream's one cursor.
func TestClaimReadsWhatItTakes(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	seedAudience(t, s, 10000)
	_, err := s.Append(ctx, "actor/alice", entry("post"))
	require.NoError(t, err)

	q := store.DueQuery{At: at(0), Limit: 32, Namespace: "activitypub", Owner: "w", LeaseUntil: at(60),
		MaxPerHost: 4, Busy: map[string]int{"h0.example:443": 3}}
	batch, err := s.Due(ctx, q)
	require.NoError(t, err)
	var want []string
	for h := range 9 {
		for i := range 4 {
			if h > 0 || i == 0 { // h0 has room for one
				want = append(want, fmt.Sprintf("actor/alice/inbox-%06d", 10*h+i))
			}
		}
	}
	var got []string
	for _, st := range batch.Registrations {
		got = append(got, key(st.Stream, st.ID))
	}
	require.Equal(t, want[:32], got, "the first in claim order, at most 4 a host, Busy counted")
	require.True(t, batch.More)

	depth := postgres.PickDepth * (q.Limit + 1)
	tx := plannerTx(t, s)
	read := 0.0
	walk(plan(t, tx, postgres.SQLPick, q.Namespace, at(1), []string{}, depth), func(node map[string]any) {
		typ, _ := node["Node Type"].(string)
		if node["Relation Name"] == "herald_registration" && strings.HasSuffix(typ, "Scan") {
			rows, _ := node["Actual Rows"].(float64)
			removed, _ := node["Rows Removed by Filter"].(float64)
			loops, _ := node["Actual Loops"].(float64)
			read += (rows + removed) * loops
		}
	})
	require.LessOrEqual(t, read, float64(depth+1), "registration rows the pick read")
}

// TestPendingMarkerRace: appends and new registrations race sweeps (Due,
// Read, Advance) on one stream, from separate pools. A marker cleared while
// a write that makes a registration lag commits would strand it: afterwards
// one more sweep must bring every cursor to the head.
func TestPendingMarkerRace(t *testing.T) {
	const appends = 600
	ctx := t.Context()
	url := migratedURL(t)
	writer, sweeper := openStore(t, url), openStore(t, url)
	register := func(id string, next uint64) {
		_, err := writer.Register(ctx, store.Registration{Stream: "race", ID: id, Namespace: "webhook",
			URL: "https://receiver.example/" + id, NextSeq: next})
		require.NoError(t, err)
	}
	for i := range 3 {
		register(fmt.Sprintf("r%d", i), 1)
	}
	// A drain page longer than the stream: "one more sweep" must bring a
	// registration that was never served (late-0 lags 600 records) to the
	// head, however few racing sweeps a loaded machine managed.
	w, err := push.NewWorker(sweeper, sweeper, acceptAll{}, storetest.PayloadProjection{}, push.WithOwner("w"), push.WithDrainPage(appends+1))
	require.NoError(t, err)

	done := make(chan struct{})
	var writeErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := range appends {
			recs, err := writer.Append(ctx, "race", entry(fmt.Sprintf("race-%d", i)))
			if err != nil {
				writeErr = err
				return
			}
			if i%20 == 0 {
				// A new registration that lags at once, with no append
				// after it to set the marker again.
				if _, err := writer.Register(ctx, store.Registration{Stream: "race", ID: fmt.Sprintf("late-%d", i),
					Namespace: "webhook", URL: "https://receiver.example/late", NextSeq: recs[0].Seq}); err != nil {
					writeErr = err
					return
				}
			}
		}
	})
	sweeps := 0
	for running := true; running; sweeps++ {
		select {
		case <-done:
			running = false
		default:
		}
		require.Less(t, sweeps, 100000, "bounded")
		_, err := w.RunOnce(ctx, at(sweeps), 100)
		require.NoError(t, err)
	}
	wg.Wait()
	require.NoError(t, writeErr)

	rep, err := w.RunOnce(ctx, at(sweeps+1000), 100) // after every lease
	require.NoError(t, err)
	t.Logf("%d racing sweeps; the last one served %d registrations", sweeps, rep.Registrations)
	all, err := sweeper.List(ctx, store.ListQuery{Stream: "race"})
	require.NoError(t, err)
	require.Len(t, all, 3+appends/20)
	for _, st := range all {
		require.Equal(t, uint64(appends+1), st.NextSeq, "%s/%s reaches the head within one more sweep", st.Stream, st.ID)
	}
}

// TestUncommittedAppendIsNotLost: a sweep that runs while an append is
// uncommitted neither sees its record nor loses its marker; once it
// commits, the next sweep claims the registration.
func TestUncommittedAppendIsNotLost(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	_, err := s.Register(ctx, store.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: "https://receiver.example/r"})
	require.NoError(t, err)
	due := func(when time.Time) []store.Status {
		b, err := s.Due(ctx, store.DueQuery{At: when, Limit: 10, Namespace: "webhook", Owner: "w", LeaseUntil: when.Add(time.Minute)})
		require.NoError(t, err)
		return b.Registrations
	}
	require.Empty(t, due(at(0)), "nothing appended yet")

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = s.AppendTx(ctx, tx, "s", entry("e1"))
	require.NoError(t, err)
	require.Empty(t, due(at(1)), "the record is not committed: not due, and the sweep does not wait")
	require.NoError(t, tx.Commit(ctx))
	got := due(at(2))
	require.Len(t, got, 1, "the committed append made it due")
	require.Equal(t, uint64(1), got[0].Head)
}

// TestClearingKeepsEveryStreamName: Due passes the streams it locked to the
// statement that clears their markers as one text (an array's), so names
// with the array syntax's own characters are cleared as any other, and a
// name that is a prefix of another clears only its own.
func TestClearingKeepsEveryStreamName(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	names := []string{`a,b`, `{c}`, `"d"`, `e\f`, `NULL`, `g;h`, `g`, `ü/é`}
	for _, n := range names {
		_, err := s.Append(ctx, n, entry("e-"+n))
		require.NoError(t, err)
		_, err = s.Register(ctx, store.Registration{Stream: n, ID: "r", Namespace: "webhook", URL: "https://receiver.example/"})
		require.NoError(t, err)
	}
	// The lagging one keeps its marker; every other is idle once served.
	_, err := s.Append(ctx, "g", entry("e-g-2"))
	require.NoError(t, err)
	batch, err := s.Due(ctx, store.DueQuery{At: at(0), Limit: 100, Namespace: "webhook", Owner: "w", LeaseUntil: at(60)})
	require.NoError(t, err)
	require.Len(t, batch.Registrations, len(names))
	for _, st := range batch.Registrations {
		next := st.Head + 1
		if st.Stream == "g" {
			next = st.Head // one record left
		}
		require.NoError(t, s.Advance(ctx, st.Claim(), next))
	}
	_, err = s.Due(ctx, store.DueQuery{At: at(120), Limit: 100, Namespace: "webhook", Owner: "w2", LeaseUntil: at(180)})
	require.NoError(t, err)
	rows, err := s.Pool().Query(ctx, `SELECT stream FROM herald_stream WHERE pending ORDER BY stream`)
	require.NoError(t, err)
	pending, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"g"}, pending, "every idle stream's marker cleared, the lagging one's kept")
}

// TestClearingNeverRacesALaggingWrite pins the lock protocol of the pending
// marker. A writer that makes a registration lag (here: creates one behind
// the head, as Register does) holds the stream row's lock, uncommitted,
// while a sweep runs. The sweep must not clear the marker on a view that
// misses that registration, whether it skips the locked stream or waits for
// it: after the writer commits, the next sweep claims the registration.
func TestClearingNeverRacesALaggingWrite(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	_, err := s.Append(ctx, "s", entry("e1"))
	require.NoError(t, err)
	_, err = s.Register(ctx, store.Registration{Stream: "s", ID: "idle", Namespace: "webhook", URL: "https://receiver.example/idle", NextSeq: 2})
	require.NoError(t, err)
	due := func(when time.Time) ([]store.Status, error) {
		b, err := s.Due(ctx, store.DueQuery{At: when, Limit: 10, Namespace: "webhook", Owner: "w", LeaseUntil: when.Add(time.Minute)})
		return b.Registrations, err
	}

	writer, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer writer.Rollback(ctx)
	_, err = writer.Exec(ctx, `UPDATE herald_stream SET pending = true WHERE stream = 's'`) // the stream row first
	require.NoError(t, err)
	_, err = writer.Exec(ctx, `INSERT INTO herald_registration (stream, id, namespace, url, next_seq, next_attempt_at)
		VALUES ('s', 'new', 'webhook', 'https://receiver.example/new', 1, '0001-01-01 00:00:00+00')`)
	require.NoError(t, err)

	type result struct {
		regs []store.Status
		err  error
	}
	first := make(chan result, 1)
	go func() { regs, err := due(at(0)); first <- result{regs, err} }()
	var got *result
	for deadline := time.Now().Add(10 * time.Second); got == nil; {
		require.True(t, time.Now().Before(deadline), "the sweep neither returned nor waited for the writer's lock")
		select {
		case r := <-first:
			got = &r // it skipped the locked stream
		default:
			if lockWaiters(t, s) > 0 { // it waits for the writer: let the writer commit under it
				require.NoError(t, writer.Commit(ctx))
				r := <-first
				got = &r
			}
		}
	}
	require.NoError(t, got.err)
	_ = writer.Commit(ctx) // if the sweep skipped the stream, the writer commits now

	claimed := map[string]bool{}
	for _, st := range got.regs {
		claimed[st.ID] = true
	}
	regs, err := due(at(1))
	require.NoError(t, err)
	for _, st := range regs {
		claimed[st.ID] = true
	}
	require.True(t, claimed["new"], "the registration the writer created is claimed: its wake-up was not lost")
	require.False(t, claimed["idle"])
}

// TestDuePlansOnce: Due's statements run on their generic plans: the
// statement that clears the pending markers of streams nobody lags on,
// whose custom plans PostgreSQL kept choosing, is planned once per
// connection, and the setting ends with Due's transaction.
func TestDuePlansOnce(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, withConns(t, migratedURL(t), 1)) // every statement's plans are counted on one connection
	const claims = 8
	fanOut(t, s, "s", 1, 0)
	for i := range claims {
		// An append marks the stream pending; the claim serves it, and the
		// next one finds it idle and clears its marker.
		_, err := s.Append(ctx, "s", entry(fmt.Sprintf("e%d", i)))
		require.NoError(t, err)
		for j := range 2 {
			when := at(240*i + 120*j)
			due, err := s.Due(ctx, store.DueQuery{At: when, Limit: 1, Namespace: "webhook", Owner: fmt.Sprintf("o%d-%d", i, j),
				LeaseUntil: when.Add(time.Minute)})
			require.NoError(t, err)
			for _, st := range due.Registrations {
				require.NoError(t, s.Advance(ctx, st.Claim(), st.Head+1))
			}
		}
	}
	requireAutoPlans(t, s)
	var generic, custom int64
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`,
		postgres.SQLClearPending).Scan(&generic, &custom))
	require.Zero(t, custom, "the markers' statement was planned anew for a call")
	require.GreaterOrEqual(t, generic, int64(claims))
}
