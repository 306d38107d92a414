package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/storetest"
)

// commitAppend appends entries with AppendTx in a transaction of its own
// and commits it, leaving the records without seqs until a sequencer step.
func commitAppend(t *testing.T, s *postgres.Store, stream string, entries ...journal.Entry) []journal.Record {
	t.Helper()
	tx := openTx(t, s)
	recs, err := s.AppendTx(t.Context(), tx, stream, entries...)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(t.Context()))
	return recs
}

// openAppends appends each entry to stream with AppendTx in a transaction
// of its own, in order, and leaves them open.
func openAppends(t *testing.T, s *postgres.Store, stream string, entries ...journal.Entry) []pgx.Tx {
	t.Helper()
	txs := make([]pgx.Tx, len(entries))
	for i, e := range entries {
		txs[i] = openTx(t, s)
		_, err := s.AppendTx(t.Context(), txs[i], stream, e)
		require.NoError(t, err)
	}
	return txs
}

func sequence(t *testing.T, s *postgres.Store) int {
	t.Helper()
	n, err := s.Sequence(t.Context())
	require.NoError(t, err)
	return n
}

func readIDs(t *testing.T, s *postgres.Store, stream string) []string {
	t.Helper()
	recs, err := s.Read(t.Context(), stream, 1, 100, 0)
	require.NoError(t, err)
	ids := make([]string, len(recs))
	for i, r := range recs {
		require.Equal(t, uint64(i+1), r.Seq, "seqs of %s are gapless", stream)
		ids[i] = r.ID
	}
	return ids
}

func head(t *testing.T, s *postgres.Store, stream string) uint64 {
	t.Helper()
	h, err := s.Head(t.Context(), stream)
	require.NoError(t, err)
	return h
}

// TestTwoSequencersOnlyOneAssigns: while one process's sequencer step is
// between its writes and its commit, another process's step finds the lock
// taken and numbers nothing, and no reader sees the uncommitted seqs. After
// the first commits, the second has nothing left to do.
func TestTwoSequencersOnlyOneAssigns(t *testing.T) {
	ctx := t.Context()
	url := migratedURL(t)
	first, second := openStore(t, url), openStore(t, url)
	commitAppend(t, first, "s", entry("a"), entry("b"))
	commitAppend(t, second, "s", entry("c"))

	inStep, release := make(chan struct{}), make(chan struct{})
	postgres.SetStepHook(first, func(uint32) { close(inStep); <-release })
	done := make(chan int, 1)
	go func() {
		n, err := first.Sequence(ctx)
		if err != nil {
			t.Errorf("first sequencer: %v", err)
		}
		done <- n
	}()
	<-inStep
	require.Zero(t, sequence(t, second), "the lock is taken: the second sequencer numbers nothing")
	require.Empty(t, readIDs(t, second, "s"), "uncommitted seqs are not read")
	require.Zero(t, head(t, second, "s"))
	close(release)
	require.Equal(t, 3, <-done)
	require.Zero(t, sequence(t, second), "nothing is left for the second")
	require.Equal(t, []string{"a", "b", "c"}, readIDs(t, second, "s"), "entry order within a transaction, gapless")
	require.Equal(t, uint64(3), head(t, second, "s"))
}

// TestKilledSequencerLosesNothing: a sequencer whose connection is
// terminated between its writes and its commit (pg_terminate_backend, as
// a crash of its process) leaves every record without a seq; the next step,
// by another process, numbers them all, gaplessly.
func TestKilledSequencerLosesNothing(t *testing.T) {
	ctx := t.Context()
	url := migratedURL(t)
	victim, other := openStore(t, url), openStore(t, url)
	commitAppend(t, victim, "s", entry("a"))
	commitAppend(t, victim, "t", entry("b"))
	commitAppend(t, victim, "s", entry("c"))

	killed := false
	postgres.SetStepHook(victim, func(pid uint32) {
		var ok bool
		// The timeout makes it wait until the backend is gone.
		require.NoError(t, other.Pool().QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`, int(pid)).Scan(&ok))
		killed = ok
	})
	_, err := victim.Sequence(ctx)
	require.True(t, killed, "the sequencer's backend was terminated mid-step")
	require.ErrorIs(t, err, postgres.ErrUnavailable, "its commit never happened")
	require.Zero(t, head(t, other, "s"))
	require.Empty(t, readIDs(t, other, "s"))

	require.Equal(t, 3, sequence(t, other))
	require.Equal(t, []string{"a", "c"}, readIDs(t, other, "s"))
	require.Equal(t, []string{"b"}, readIDs(t, other, "t"))
}

// TestOpenTransactionDelaysOnlyItsOwnRecord: a transaction that appended
// and stays open (until the test says so) holds back its own record only:
// records appended to the same stream after it are numbered and delivered;
// once it commits, its record follows them.
func TestOpenTransactionDelaysOnlyItsOwnRecord(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	rc := newReceiver(t)
	_, err := s.Register(ctx, store.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: regURL(rc.URL, "s", "r")})
	require.NoError(t, err)
	w, err := push.NewWorker(s, s, storetest.HTTPTransport{Client: rc.Client(), Worker: "w"}, storetest.PayloadProjection{}, push.WithOwner("w"))
	require.NoError(t, err)

	long := openTx(t, s)
	_, err = s.AppendTx(ctx, long, "s", entry("slow"))
	require.NoError(t, err)
	commitNow := make(chan struct{})
	committed := make(chan error, 1)
	go func() { <-commitNow; committed <- long.Commit(ctx) }()

	for i, id := range []string{"quick-1", "quick-2"} {
		recs, err := s.Append(ctx, "s", entry(id))
		require.NoError(t, err, "an append is not held up by the open transaction")
		require.Equal(t, uint64(i+1), recs[0].Seq)
	}
	_, err = w.RunOnce(ctx, at(0), 10)
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2}, rc.got[key("s", "r")], "both delivered while the transaction is open")

	close(commitNow)
	require.NoError(t, <-committed)
	_, err = w.RunOnce(ctx, at(1), 10) // Due numbers it first
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2, 3}, rc.got[key("s", "r")])
	require.Equal(t, []string{"quick-1", "quick-2", "slow"}, readIDs(t, s, "s"))
}

// TestIdempotencyIsDecidedAtAppend: a record committed but not yet
// numbered is found by the next append of its id: the same content returns
// it (Seq 0 from AppendTx, its seq from Append), other content is a
// conflict, and nothing is written twice.
func TestIdempotencyIsDecidedAtAppend(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	commitAppend(t, s, "s", entry("a"))

	tx := openTx(t, s)
	again, err := s.AppendTx(ctx, tx, "s", entry("a"))
	require.NoError(t, err)
	require.Zero(t, again[0].Seq, "stored, not yet numbered")
	other := entry("a")
	other.Payload = []byte(`{"other":true}`)
	_, err = s.AppendTx(ctx, tx, "s", other)
	var ce *journal.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "payload", ce.Field)
	_, err = s.AppendTx(ctx, tx, "elsewhere", entry("a"))
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "stream", ce.Field)
	require.NoError(t, tx.Commit(ctx))

	recs, err := s.Append(ctx, "s", entry("a"))
	require.NoError(t, err)
	require.Equal(t, uint64(1), recs[0].Seq, "Append returns the seq")
	require.Equal(t, []string{"a"}, readIDs(t, s, "s"), "written once")
	require.Zero(t, sequence(t, s))
}

// TestSealingRace pins what happens to records that race their stream's
// final record (the package doc, "Sealing"): committed before the final is
// numbered, they are numbered before it; committed after, they are refused,
// kept with the reason and never read; a second final record is refused;
// and a committed final record not yet numbered already seals the stream
// for appends.
func TestSealingRace(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	final := func(id string) journal.Entry { e := entry(id); e.Final = true; return e }

	// Both open, both pass the seal check, both commit; one step numbers
	// them: the final record last.
	txs := openAppends(t, s, "task/1", final("end"), entry("late"))
	require.NoError(t, txs[0].Commit(ctx))
	require.NoError(t, txs[1].Commit(ctx))
	require.Equal(t, 2, sequence(t, s))
	require.Equal(t, []string{"late", "end"}, readIDs(t, s, "task/1"))
	_, err := s.Append(ctx, "task/1", entry("after"))
	var se *journal.SealedError
	require.ErrorAs(t, err, &se)
	require.Equal(t, uint64(2), se.FinalSeq)

	// Committed after the final record was numbered: refused.
	later := openTx(t, s)
	_, err = s.AppendTx(ctx, later, "task/2", entry("later"))
	require.NoError(t, err)
	recs, err := s.Append(ctx, "task/2", final("end-2"))
	require.NoError(t, err)
	require.Equal(t, uint64(1), recs[0].Seq)
	require.NoError(t, later.Commit(ctx))
	require.Equal(t, 1, sequence(t, s))
	require.Equal(t, []string{"end-2"}, readIDs(t, s, "task/2"), "the refused record is never read")
	require.Equal(t, uint64(1), head(t, s, "task/2"))
	refused, err := s.Refused(ctx, "task/2", 10)
	require.NoError(t, err)
	require.Len(t, refused, 1)
	require.Equal(t, "later", refused[0].ID)
	require.Contains(t, refused[0].Reason, "after the stream's final record #1")
	_, err = s.Append(ctx, "task/2", entry("later"))
	require.ErrorAs(t, err, &se, "appending the refused id again says why")
	_, err = s.Lookup(ctx, "later")
	require.ErrorIs(t, err, journal.ErrNotFound)

	// Two final records: the first inserted wins, the other is refused.
	txs = openAppends(t, s, "task/3", final("fa"), final("fb"))
	require.NoError(t, txs[1].Commit(ctx))
	require.NoError(t, txs[0].Commit(ctx))
	require.Equal(t, 2, sequence(t, s))
	require.Equal(t, []string{"fa"}, readIDs(t, s, "task/3"))
	refused, err = s.Refused(ctx, "", 10)
	require.NoError(t, err)
	require.Equal(t, []string{"later", "fb"}, []string{refused[0].ID, refused[1].ID})
	require.Contains(t, refused[1].Reason, "another final record of the stream, #1")

	// A committed final record without a seq seals the stream already.
	commitAppend(t, s, "task/4", final("end-4"))
	tx := openTx(t, s)
	_, err = s.AppendTx(ctx, tx, "task/4", entry("too-late"))
	require.ErrorAs(t, err, &se)
	require.Zero(t, se.FinalSeq, "the final record has no seq yet")
	require.NoError(t, tx.Commit(ctx), "the refusal left the transaction usable")
}

// TestSavepointsAreNumberedWithTheirTransaction: a record appended in a
// subtransaction is numbered when its top-level transaction commits, with
// the records around it, in append order; one whose savepoint was rolled
// back is never numbered, and leaves no gap.
func TestSavepointsAreNumberedWithTheirTransaction(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	held := openTx(t, s) // running at the steps below: its records wait for it
	_, err := s.AppendTx(ctx, held, "s", entry("a"))
	require.NoError(t, err)
	for _, sp := range []struct {
		id   string
		keep bool
	}{{"b", true}, {"gone", false}, {"c", true}} {
		_, err = held.Exec(ctx, "SAVEPOINT sp")
		require.NoError(t, err)
		_, err = s.AppendTx(ctx, held, "s", entry(sp.id))
		require.NoError(t, err)
		if sp.keep {
			_, err = held.Exec(ctx, "RELEASE SAVEPOINT sp")
		} else {
			_, err = held.Exec(ctx, "ROLLBACK TO SAVEPOINT sp")
		}
		require.NoError(t, err)
	}
	recs, err := s.Append(ctx, "s", entry("other"))
	require.NoError(t, err)
	require.Equal(t, uint64(1), recs[0].Seq, "the open transaction holds back its own records only")
	require.NoError(t, held.Commit(ctx))
	require.Equal(t, 3, sequence(t, s))
	require.Equal(t, []string{"other", "a", "b", "c"}, readIDs(t, s, "s"))
	_, err = s.Lookup(ctx, "gone")
	require.ErrorIs(t, err, journal.ErrNotFound)
	require.Zero(t, sequence(t, s))
}

// TestACommitDuringAnOpenWindowWaitsForTheNext: a full page leaves the
// step's window open, and the next pages number the rest of it only; a
// record that commits meanwhile is numbered after all of them, by the step
// after the window closes.
func TestACommitDuringAnOpenWindowWaitsForTheNext(t *testing.T) {
	s := newStore(t)
	postgres.SetSequencerPage(s, 2)
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5"} {
		commitAppend(t, s, "s", entry(id))
	}
	steps := 0
	postgres.SetStepHook(s, func(uint32) {
		if steps++; steps == 1 {
			commitAppend(t, s, "s", entry("late"))
		}
	})
	require.Equal(t, 5, sequence(t, s), "three pages close the window the first opened")
	require.Equal(t, []string{"r1", "r2", "r3", "r4", "r5"}, readIDs(t, s, "s"))
	require.Equal(t, 1, sequence(t, s))
	require.Equal(t, []string{"r1", "r2", "r3", "r4", "r5", "late"}, readIDs(t, s, "s"))
}

// TestFullPageKeepsAFinalRecordLast: a step's page ends at a stream's final
// record while a record of that stream committed before the step lies past
// the page; the step numbers it too, before the final record, rather than
// leave it for the next step to refuse. The next page numbers the rest.
func TestFullPageKeepsAFinalRecordLast(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	postgres.SetSequencerPage(s, 2)
	final := entry("end")
	final.Final = true
	late := openTx(t, s) // inserted first (lowest position), committed last
	_, err := s.AppendTx(ctx, late, "task/9", entry("x2"))
	require.NoError(t, err)
	commitAppend(t, s, "task/9", entry("x1"))
	commitAppend(t, s, "task/8", entry("y1"))
	commitAppend(t, s, "task/9", final)
	commitAppend(t, s, "task/8", entry("y2"))
	require.NoError(t, late.Commit(ctx))
	// Insertion order x2, x1, y1, end, y2: pages {x2, x1}, {y1, end}, {y2}.
	require.Equal(t, 5, sequence(t, s), "full pages are followed by more steps until one is not full")
	require.Equal(t, []string{"x2", "x1", "end"}, readIDs(t, s, "task/9"))
	require.Equal(t, []string{"y1", "y2"}, readIDs(t, s, "task/8"))

	commitAppend(t, s, "task/7", entry("a1"))
	aEnd := entry("a-end")
	aEnd.Final = true
	txs := openAppends(t, s, "task/7", aEnd, entry("a2")) // both pass the seal check; a2 is inserted after a-end
	require.NoError(t, txs[0].Commit(ctx))
	require.NoError(t, txs[1].Commit(ctx)) // committed before the step: numbered before a-end
	commitAppend(t, s, "task/6", entry("b1"))
	// The first page, {a1, a-end}, is full and holds task/7's final record.
	require.Equal(t, 4, sequence(t, s))
	require.Equal(t, []string{"a1", "a2", "a-end"}, readIDs(t, s, "task/7"))
	require.Equal(t, []string{"b1"}, readIDs(t, s, "task/6"))
	refused, err := s.Refused(ctx, "", 10)
	require.NoError(t, err)
	require.Empty(t, refused)
}

// TestStepVisitsEachRecordOnce: a step's work grows with the records it
// numbers, never with their square. The planner's statistics cannot follow
// the partial index of waiting records (it empties every few milliseconds),
// so it estimates one row wherever the step joins them; a nested loop that
// rescanned the whole page for each record would make a sequencer that fell
// behind slower the further behind it was. Each join of the step must be
// driven by the page, through an index or a tuple id.
func TestStepVisitsEachRecordOnce(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	pool := s.Pool()
	const insert = `INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at)
SELECT 'task/' || (g % 100), $1 || g, 'k', 'application/json', '\x7b7d', false, '\x00', now() FROM generate_series(1, 1000) g`
	for _, batch := range []string{"a-", "b-"} {
		_, err := pool.Exec(ctx, insert, batch)
		require.NoError(t, err)
		require.Equal(t, 1000, sequence(t, s))
	}
	_, err := pool.Exec(ctx, insert, "waiting-")
	require.NoError(t, err)

	tx := openTx(t, s)
	_, err = tx.Exec(ctx, asSequencer)
	require.NoError(t, err)
	walk(plan(t, tx, postgres.SQLNumber, 10_000), func(node map[string]any) {
		removed, _ := node["Rows Removed by Join Filter"].(float64)
		require.LessOrEqual(t, removed, 1000.0, "a join of the step scans the page once per record: %v", node["Node Type"])
		if node["Node Type"] == "ModifyTable" && node["Relation Name"] == "herald_seq" {
			rows, _ := node["Actual Rows"].(float64)
			require.LessOrEqual(t, rows, 1000.0)
		}
	})
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 1000, sequence(t, s))
	require.Len(t, readIDs(t, s, "task/7"), 30)
}

// TestALongTransactionCostsAStepOneProbe: a transaction that appended and
// stays open is probed for on every step (its records wait for it), but the
// records numbered since it began are not read again: the probe and a step
// with nothing to number read no row of herald_record.
func TestALongTransactionCostsAStepOneProbe(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	long := openTx(t, s)
	_, err := s.AppendTx(ctx, long, "s", entry("long"))
	require.NoError(t, err)
	for i := range 10 {
		entries := make([]journal.Entry, 100)
		for j := range entries {
			entries[j] = entry(fmt.Sprintf("r%d-%d", i, j))
		}
		_, err := s.Append(ctx, "t", entries...)
		require.NoError(t, err)
	}
	require.Zero(t, sequence(t, s))

	tx := plannerTx(t, s, asSequencer)
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"probe": {postgres.SQLAnyUnsequenced, nil},
		"step":  {postgres.SQLNumber, []any{10_000}},
	} {
		var read float64
		walk(plan(t, tx, q.sql, q.args...), func(node map[string]any) {
			if node["Relation Name"] == "herald_record" && node["Node Type"] != "ModifyTable" {
				rows, _ := node["Actual Rows"].(float64)
				loops, _ := node["Actual Loops"].(float64)
				read += rows * loops
			}
		})
		require.Zero(t, read, "%s: records read", name)
	}
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, long.Commit(ctx))
	require.Equal(t, 1, sequence(t, s))
}

// The runner's cadence: larger steps while records keep coming, within
// the bounds that keep a record's wait for its seq short.
func TestSequencerCadenceAdaptsToTheLoad(t *testing.T) {
	const (
		lo, busy, hi = postgres.MinSequencerInterval, postgres.DefaultSequencerInterval, postgres.MaxSequencerInterval
		batch        = postgres.SequencerBatch
	)
	for _, c := range []struct {
		name     string
		interval time.Duration
		n        int
		want     time.Duration
	}{
		{"a small step waits longer for the next", lo, 3, 2 * lo},
		{"small steps wait at most busy", busy, batch - 1, busy},
		{"a large step halves the wait", busy, batch, busy / 2},
		{"large steps wait at least the shortest", lo, 10 * batch, lo},
		{"records found while backing off: back to busy at most", hi, 1, busy},
		{"many records found while backing off", hi, 10 * batch, busy},
		{"no record: back off", busy, 0, 2 * busy},
		{"no record: at most the longest", hi, 0, hi},
		{"a failed poll waits the longest", lo, -1, hi},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, postgres.NextPoll(c.interval, busy, c.n))
		})
	}
	// Whatever the records found, a busy runner's wait stays in bounds.
	for _, iv := range []time.Duration{lo, 7 * time.Millisecond, busy, hi} {
		for _, n := range []int{1, 2, batch - 1, batch, 1 << 20} {
			got := postgres.NextPoll(iv, busy, n)
			require.True(t, got >= lo && got <= busy, "NextPoll(%v, %d) = %v, not in [%v, %v]", iv, n, got, lo, busy)
		}
	}
	// The shortest busy interval is a fixed cadence.
	for _, n := range []int{1, batch, 10 * batch} {
		require.Equal(t, lo, postgres.NextPoll(lo, lo, n))
	}
}

func TestSequencerIntervalOutOfBoundsIsRefused(t *testing.T) {
	pool := newPool(t)
	for _, d := range []time.Duration{0, postgres.MinSequencerInterval - 1, postgres.MaxSequencerInterval + 1} {
		_, err := postgres.New(t.Context(), pool, postgres.WithSequencerInterval(d))
		require.ErrorIs(t, err, journal.ErrInvalid)
		require.ErrorContains(t, err, "sequencer interval")
	}
	s, err := postgres.New(t.Context(), pool, postgres.WithSequencerInterval(postgres.MinSequencerInterval))
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// TestFirstRecordsOfAStreamAreNumberedInTheSameCall: a stream's first
// records, committed beside records of streams that have a row, are
// numbered by the same Sequence (or Append) call, in order and gaplessly.
func TestFirstRecordsOfAStreamAreNumberedInTheSameCall(t *testing.T) {
	s := newStore(t)
	commitAppend(t, s, "old", entry("o1"))
	require.Equal(t, 1, sequence(t, s))
	commitAppend(t, s, "old", entry("o2"))
	commitAppend(t, s, "new", entry("n1"), entry("n2"))
	commitAppend(t, s, "old", entry("o3"))
	require.Equal(t, 4, sequence(t, s), "the old stream's records and the new stream's, in one call")
	require.Equal(t, []string{"o1", "o2", "o3"}, readIDs(t, s, "old"))
	require.Equal(t, []string{"n1", "n2"}, readIDs(t, s, "new"))
	require.Equal(t, uint64(2), head(t, s, "new"))

	recs, err := s.Append(t.Context(), "newer", entry("x1"))
	require.NoError(t, err)
	require.Equal(t, uint64(1), recs[0].Seq, "Append returns the seq of a new stream's first record")
	commitAppend(t, s, "new", entry("n3"))
	require.Equal(t, 1, sequence(t, s))
	require.Equal(t, []string{"n1", "n2", "n3"}, readIDs(t, s, "new"))
}
