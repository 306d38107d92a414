package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store/postgres"
)

// TestLateCommitsAreNeverSkipped is invariant 4: 16 writers append to one
// stream with AppendTx in separate transactions, a fifth of which roll back
// after appending, while a reader follows the stream from its cursor and
// two sequencers (another process's RunSequencer, and the reader's own
// Sequence calls) race to number the committed records. The reader sees
// seqs 1..N exactly once each, in order, none from a rolled-back
// transaction, none skipped.
func TestLateCommitsAreNeverSkipped(t *testing.T) {
	const writers, each = 16, 500
	ctx := t.Context()
	url := migratedURL(t)
	s, daemon := openStore(t, url), openStore(t, url)
	runCtx, stopRunner := context.WithCancel(ctx)
	defer stopRunner()
	runnerDone := make(chan struct{})
	go func() {
		defer close(runnerDone)
		daemon.RunSequencer(runCtx, func(err error) { t.Errorf("sequencer: %v", err) })
	}()

	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		committed  = map[string]bool{}
		rolledBack = map[string]bool{}
		errs       = make(chan error, writers)
		// readsDuring counts the reader's reads that returned records while
		// writers ran: the writers go on past each until there were 10, so
		// that the reader races them however the machine schedules.
		readsDuring atomic.Int64
	)
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 4))
			for i := 0; i < each || readsDuring.Load() < 10; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				rollback := rng.IntN(5) == 0
				if err := appendInTx(ctx, s, "hot", entry(id), rollback); err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
					return
				}
				mu.Lock()
				if rollback {
					rolledBack[id] = true
				} else {
					committed[id] = true
				}
				mu.Unlock()
			}
		})
	}
	go func() { wg.Wait(); close(done) }()

	// The reader: from its cursor, as a worker reads.
	var (
		seen     = map[string]bool{}
		next     = uint64(1)
		numbered int // records the reader's own Sequence calls numbered
	)
	for finished := false; ; {
		if !finished {
			select {
			case <-done:
				// Every transaction has ended: stop the other sequencer,
				// and number what is left here.
				finished = true
				stopRunner()
				<-runnerDone
			default:
			}
		}
		sequence := s.Sequence
		if finished {
			// The other sequencer's last transaction may still hold the
			// lock (its backend ends when it notices the cancellation).
			sequence = func(ctx context.Context) (int, error) { return postgres.SequenceWaiting(ctx, s) }
		}
		n, err := sequence(ctx)
		require.NoError(t, err)
		numbered += n
		recs, err := s.Read(ctx, "hot", next, 100, 0)
		require.NoError(t, err)
		for _, r := range recs {
			require.Equal(t, next, r.Seq, "the reader sees seqs in order, none skipped")
			require.False(t, seen[r.ID], "record %s read twice", r.ID)
			seen[r.ID] = true
			next++
		}
		if !finished && len(recs) > 0 {
			readsDuring.Add(1)
		}
		if finished && len(recs) == 0 && n == 0 {
			break
		}
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, seen, len(committed), "every committed record was read once")
	for id := range seen {
		require.True(t, committed[id], "record %s was read but its transaction rolled back", id)
		require.False(t, rolledBack[id])
	}
	head, err := s.Head(ctx, "hot")
	require.NoError(t, err)
	require.Equal(t, uint64(len(committed)), head, "the head counts committed records only: gapless")
	require.Greater(t, len(rolledBack), writers*each/10, "about a fifth rolled back")
	require.GreaterOrEqual(t, readsDuring.Load(), int64(10), "the reader raced the writers")
	require.Less(t, numbered, len(committed), "the other process's sequencer numbered some records too")
}

func appendInTx(ctx context.Context, s *postgres.Store, stream string, e journal.Entry, rollback bool) error {
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := s.AppendTx(ctx, tx, stream, e); err != nil {
		return err
	}
	if rollback {
		return tx.Rollback(ctx)
	}
	return tx.Commit(ctx)
}

// TestAppendTxCommitsWithTheDomainWrite: the transactional outbox. A
// rolled-back transaction leaves neither the caller's row nor the record; a
// committed one leaves both.
func TestAppendTxCommitsWithTheDomainWrite(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	_, err := s.Pool().Exec(ctx, `CREATE TABLE task (id text PRIMARY KEY, state text NOT NULL)`)
	require.NoError(t, err)

	write := func(id string, commit bool) {
		tx, err := s.Pool().Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `INSERT INTO task (id, state) VALUES ($1, 'working')`, id)
		require.NoError(t, err)
		recs, err := s.AppendTx(ctx, tx, "task/"+id, entry(id+"-created"))
		require.NoError(t, err)
		require.Zero(t, recs[0].Seq, "the seq is assigned after the commit")
		if commit {
			require.NoError(t, tx.Commit(ctx))
		} else {
			require.NoError(t, tx.Rollback(ctx))
		}
		_, err = s.Sequence(ctx)
		require.NoError(t, err)
	}
	write("rolled-back", false)
	write("committed", true)

	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM task WHERE id = 'rolled-back'`).Scan(&n))
	require.Zero(t, n, "the domain row rolled back")
	_, err = s.Lookup(ctx, "rolled-back-created")
	require.ErrorIs(t, err, journal.ErrNotFound, "so did the record")
	head, err := s.Head(ctx, "task/rolled-back")
	require.NoError(t, err)
	require.Zero(t, head)

	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM task WHERE id = 'committed'`).Scan(&n))
	require.Equal(t, 1, n)
	rec, err := s.Lookup(ctx, "committed-created")
	require.NoError(t, err)
	require.Equal(t, "task/committed", rec.Stream)
	require.Equal(t, uint64(1), rec.Seq, "numbered by the sequencer step after the commit")
}

// TestAppendTxRefusalLeavesTxUsable: bad input, a conflict or a sealed
// stream is reported without aborting the caller's transaction, which can
// still commit its own writes.
func TestAppendTxRefusalLeavesTxUsable(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	final := entry("end")
	final.Final = true
	_, err := s.Append(ctx, "sealed", final)
	require.NoError(t, err)
	_, err = s.Append(ctx, "s", entry("taken"))
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `CREATE TABLE note (n int)`)
	require.NoError(t, err)

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `INSERT INTO note VALUES (1)`)
	require.NoError(t, err)

	_, err = s.AppendTx(ctx, tx, "sealed", entry("after"))
	require.ErrorIs(t, err, journal.ErrSealed)
	conflicting := entry("taken")
	conflicting.Payload = []byte(`{"other":true}`)
	_, err = s.AppendTx(ctx, tx, "s", conflicting)
	require.ErrorIs(t, err, journal.ErrConflict)
	_, err = s.AppendTx(ctx, tx, "bad stream", entry("x"))
	require.ErrorIs(t, err, journal.ErrInvalid)
	_, err = s.AppendTx(ctx, nil, "s", entry("x"))
	require.ErrorIs(t, err, journal.ErrInvalid)

	recs, err := s.AppendTx(ctx, tx, "s", entry("fine"))
	require.NoError(t, err, "the transaction is still usable")
	require.Zero(t, recs[0].Seq)
	require.NoError(t, tx.Commit(ctx))
	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM note`).Scan(&n))
	require.Equal(t, 1, n)
	_, err = s.Sequence(ctx)
	require.NoError(t, err)
	rec, err := s.Lookup(ctx, "fine")
	require.NoError(t, err)
	require.Equal(t, uint64(2), rec.Seq)
}

// TestSameIDOnTwoStreamsAtOnce: two transactions append the same new id to
// two streams; the second waits on the first's uncommitted row. When the
// first commits, the second reports the conflict, moves no head and can
// still commit; when the first rolls back, the second appends.
func TestSameIDOnTwoStreamsAtOnce(t *testing.T) {
	for _, firstCommits := range []bool{true, false} {
		t.Run(fmt.Sprintf("first commits %v", firstCommits), func(t *testing.T) {
			ctx := t.Context()
			s := newStore(t)
			first, err := s.Pool().Begin(ctx)
			require.NoError(t, err)
			defer first.Rollback(ctx)
			_, err = s.AppendTx(ctx, first, "a", entry("shared"))
			require.NoError(t, err)

			second := make(chan error, 1)
			go func() {
				tx, err := s.Pool().Begin(ctx)
				if err != nil {
					second <- err
					return
				}
				defer tx.Rollback(context.WithoutCancel(ctx))
				_, appendErr := s.AppendTx(ctx, tx, "b", entry("shared"))
				if err := tx.Commit(ctx); err != nil {
					second <- errors.Join(appendErr, fmt.Errorf("commit after the append: %w", err))
					return
				}
				second <- appendErr
			}()
			waitForLockWait(t, s)
			if firstCommits {
				require.NoError(t, first.Commit(ctx))
			} else {
				require.NoError(t, first.Rollback(ctx))
			}
			err = <-second
			_, seqErr := s.Sequence(ctx)
			require.NoError(t, seqErr)
			headB, headErr := s.Head(ctx, "b")
			require.NoError(t, headErr)
			if firstCommits {
				require.ErrorIs(t, err, journal.ErrConflict)
				var ce *journal.ConflictError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, "stream", ce.Field)
				require.Zero(t, headB, "the conflicting append moved no head")
			} else {
				require.NoError(t, err)
				require.Equal(t, uint64(1), headB)
			}
		})
	}
}

// TestSameIDOnOneStreamAtOnce: two transactions append the same new id
// with the same content to one stream; the second waits on the first's
// uncommitted row. When the first commits, the second is the idempotent
// repeat: it returns the stored record, writes nothing, and the stream has
// one record. One entry and a batch of two are both pinned.
func TestSameIDOnOneStreamAtOnce(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d entries", n), func(t *testing.T) {
			ctx := t.Context()
			s := newStore(t)
			entries := []journal.Entry{entry("shared"), entry("other")}[:n]
			first, err := s.Pool().Begin(ctx)
			require.NoError(t, err)
			defer first.Rollback(ctx)
			_, err = s.AppendTx(ctx, first, "a", entries...)
			require.NoError(t, err)

			type result struct {
				recs []journal.Record
				err  error
			}
			second := make(chan result, 1)
			go func() {
				tx, err := s.Pool().Begin(ctx)
				if err != nil {
					second <- result{err: err}
					return
				}
				defer tx.Rollback(context.WithoutCancel(ctx))
				recs, appendErr := s.AppendTx(ctx, tx, "a", entries...)
				if err := tx.Commit(ctx); err != nil {
					second <- result{err: errors.Join(appendErr, fmt.Errorf("commit after the append: %w", err))}
					return
				}
				second <- result{recs, appendErr}
			}()
			waitForLockWait(t, s)
			require.NoError(t, first.Commit(ctx))
			got := <-second
			_, err = s.Sequence(ctx)
			require.NoError(t, err)
			head, err := s.Head(ctx, "a")
			require.NoError(t, err)
			require.Equal(t, uint64(n), head, "the second append wrote nothing")
			require.NoError(t, got.err)
			require.Len(t, got.recs, n)
			for i, r := range got.recs {
				require.Equal(t, entries[i].ID, r.ID)
				require.Equal(t, entries[i].Payload, r.Payload)
			}
		})
	}
}

// TestClockStampsAppendedAt: WithClock stamps AppendedAt (UTC, to the
// microsecond, as stored).
func TestClockStampsAppendedAt(t *testing.T) {
	ctx := t.Context()
	when := time.Date(2026, 3, 15, 11, 0, 0, 123456789, time.FixedZone("CET", 3600))
	s := newStore(t, postgres.WithClock(func() time.Time { return when }))
	recs, err := s.Append(ctx, "s", entry("a"))
	require.NoError(t, err)
	want := when.UTC().Truncate(time.Microsecond)
	require.Equal(t, want, recs[0].AppendedAt)
	got, err := s.Read(ctx, "s", 1, 1, 0)
	require.NoError(t, err)
	require.Equal(t, want, got[0].AppendedAt)
}

// TestAppendSealCheckIsOneProbeOfTheFinalRecords: the one-entry append
// (herald_append_rows' first INSERT) asks whether its stream is sealed
// through the index of final records alone, so that for an open stream it
// reads no row of herald_stream (the row the sequencer updates at every
// step) and no record; for a sealed stream it inserts nothing. Counted by
// the transaction's own statistics, with generic plans, over 1,000 streams
// of 5 records.
func TestAppendSealCheckIsOneProbeOfTheFinalRecords(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, migratedURL(t))
	pool := s.Pool()
	_, err := pool.Exec(ctx, `INSERT INTO herald_stream (stream, head) SELECT 'open/' || g, 5 FROM generate_series(1, 1000) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at)
SELECT 'open/' || (g % 1000 + 1), 'r' || g, 'k', 'application/json', '\x7b7d', false, '\x00', now()
FROM generate_series(0, 4999) g`)
	require.NoError(t, err)
	require.Equal(t, 5000, sequence(t, s))
	_, err = s.Append(ctx, "sealed", journal.Entry{ID: "last", Kind: "k", Payload: []byte("{}"), Final: true})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE herald_stream, herald_record`)
	require.NoError(t, err)

	type counts struct{ finalScans, finalRows, streamScans, recordFetched, recordSeqScans, inserted int64 }
	probe := func(stream string) (counts, error) {
		tx := openTx(t, s)
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`)
		require.NoError(t, err)
		// The transaction's statistics include earlier ones not yet
		// flushed: the append's are the difference.
		read := func() (c counts) {
			require.NoError(t, tx.QueryRow(ctx, `SELECT pg_stat_get_xact_numscans('herald_record_final'::regclass),
    pg_stat_get_xact_tuples_returned('herald_record_final'::regclass),
    (SELECT seq_scan + coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables WHERE relid = 'herald_stream'::regclass),
    (SELECT coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables WHERE relid = 'herald_record'::regclass),
    (SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid = 'herald_record'::regclass),
    (SELECT n_tup_ins FROM pg_stat_xact_user_tables WHERE relid = 'herald_record'::regclass)`).
				Scan(&c.finalScans, &c.finalRows, &c.streamScans, &c.recordFetched, &c.recordSeqScans, &c.inserted))
			return c
		}
		before := read()
		_, appendErr := s.AppendTx(ctx, tx, stream, journal.Entry{ID: "id-1", Kind: "k", Payload: []byte("{}")})
		c := read()
		c.finalScans -= before.finalScans
		c.finalRows -= before.finalRows
		c.streamScans -= before.streamScans
		c.recordFetched -= before.recordFetched
		c.recordSeqScans -= before.recordSeqScans
		c.inserted -= before.inserted
		return c, appendErr
	}

	c, err := probe("open/7")
	require.NoError(t, err)
	require.Equal(t, counts{finalScans: 1, inserted: 1}, c, "an open stream's record goes in after one probe of the final records, which finds none")

	c, err = probe("sealed")
	require.ErrorIs(t, err, journal.ErrSealed)
	require.Zero(t, c.inserted, "a sealed stream's record does not go in")
}
