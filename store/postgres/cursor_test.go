package postgres_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// TestFencedWriteJudgesTheLeaseAfterWaiting pins how a fenced write decides
// while another transaction holds the registration's row: it waits for
// that transaction, then judges the lease that transaction left. When the
// other transaction took the lease away (as a rewind does), the write is
// refused with ErrLeaseLost, stores no evidence and leaves the cursor where
// the other transaction put it; when it only touched the row, the write
// applies.
func TestFencedWriteJudgesTheLeaseAfterWaiting(t *testing.T) {
	for name, c := range map[string]struct {
		concurrent string // run on the registration's row, uncommitted, while the write starts
		lost       bool
		nextSeq    uint64 // the cursor afterwards
	}{
		"lease taken away": {`UPDATE herald_registration SET next_seq = 1, lease_owner = '', lease_until = NULL
			WHERE stream = 's' AND id = 'r'`, true, 1},
		"lease kept": {`SELECT 1 FROM herald_registration WHERE stream = 's' AND id = 'r' FOR NO KEY UPDATE`, false, 3},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := newStore(t)
			for _, id := range []string{"e1", "e2", "e3"} {
				_, err := s.Append(ctx, "s", entry(id))
				require.NoError(t, err)
			}
			_, err := s.Register(ctx, store.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: "https://receiver.example/r"})
			require.NoError(t, err)
			batch, err := s.Due(ctx, store.DueQuery{At: at(0), Limit: 1, Namespace: "webhook", Owner: "w1", LeaseUntil: at(60)})
			require.NoError(t, err)
			require.Len(t, batch.Registrations, 1)
			claim := batch.Registrations[0].Claim()

			other, err := s.Pool().Begin(ctx)
			require.NoError(t, err)
			defer other.Rollback(ctx)
			_, err = other.Exec(ctx, c.concurrent)
			require.NoError(t, err)

			done := make(chan error, 1)
			go func() {
				done <- s.Retry(ctx, claim, 3, at(30), store.Evidence{At: at(1), Event: store.EventFailed, Error: "503"})
			}()
			waitForLockWait(t, s)
			require.NoError(t, other.Commit(ctx))
			err = <-done

			st, gerr := s.Get(ctx, "s", "r")
			require.NoError(t, gerr)
			evs, eerr := s.Evidence(ctx, "s", "r", 0)
			require.NoError(t, eerr)
			if c.lost {
				require.ErrorIs(t, err, store.ErrLeaseLost)
				require.Empty(t, evs, "a fenced-out write stores no evidence")
				require.Zero(t, st.Attempts)
			} else {
				require.NoError(t, err)
				require.Len(t, evs, 1)
				require.Equal(t, 1, st.Attempts)
			}
			require.Equal(t, c.nextSeq, st.NextSeq)
			require.Empty(t, st.LeaseOwner)
		})
	}
}

// TestAdvanceBatchPlansOnce: AdvanceBatch's two statements run on their
// generic plans, planned once per connection, not once per call (a custom
// plan of unnest, which PostgreSQL kept choosing for batches of a few
// saves, cost more CPU than the statement itself), and the setting that
// makes them so ends with the batch: the connection goes back to the pool
// as it came.
func TestAdvanceBatchPlansOnce(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, withConns(t, migratedURL(t), 1)) // every statement's plans are counted on one connection
	const regs, batches = 3, 8
	fanOut(t, s, "s", regs, batches)
	for i := range batches {
		when := at(120 * (i + 1)) // every lease of the last batch has expired
		saves := make([]store.CursorSave, regs)
		for j, st := range claim(t, s, when, fmt.Sprintf("o%d", i), regs, regs) {
			saves[j] = store.CursorSave{Claim: st.Claim(), NextSeq: st.NextSeq + 1}
		}
		errs, err := s.AdvanceBatch(ctx, saves)
		require.NoError(t, err)
		require.Equal(t, make([]error, regs), errs)
	}
	requireAutoPlans(t, s)
	type plans struct {
		Statement       string
		Generic, Custom int64
	}
	rows, err := s.Pool().Query(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
WHERE statement IN ($1, $2)`, postgres.SQLFenceBatch, postgres.SQLAdvanceBatch)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[plans])
	require.NoError(t, err)
	require.Len(t, got, 2, "both statements ran as prepared statements on the connection")
	for _, p := range got {
		require.Zero(t, p.Custom, "planned anew for a call: %.60s", p.Statement)
		require.EqualValues(t, batches, p.Generic, "%.60s", p.Statement)
	}
}

// requireAutoPlans checks that the store's one connection plans as it
// came: a statement's plan_cache_mode ended with its transaction.
func requireAutoPlans(t *testing.T, s *postgres.Store) {
	t.Helper()
	var mode string
	require.NoError(t, s.Pool().QueryRow(t.Context(), `SHOW plan_cache_mode`).Scan(&mode))
	require.Equal(t, "auto", mode, "the setting outlived its transaction")
}

// TestFanoutSharesReadsAndCommitsUnderRun runs the dispatcher over a
// fan-out on PostgreSQL with its shared pages and group commit: every
// registration gets every record once, in order, and its cursor is saved
// at the end of the stream; the turns of a claim share one journal read.
func TestFanoutSharesReadsAndCommitsUnderRun(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	const regs, recs = 300, 12
	fanOut(t, s, "fanout", regs, recs)
	calls := &callCounter{Store: s}
	recv := newOrderReceiver(regs * recs)
	runFanout(t, calls, recv, 64)

	for i := range regs {
		id := fmt.Sprintf("r%d", i)
		require.True(t, slices.Equal(seqsUpTo(recs), recv.seqs[id]), "%s got %v", id, recv.seqs[id])
		st, err := s.Get(ctx, "fanout", id)
		require.NoError(t, err)
		require.Equal(t, uint64(recs+1), st.NextSeq, "%s: the cursor was saved", id)
		require.Empty(t, st.LeaseOwner, "%s: and the lease released", id)
	}
	require.LessOrEqual(t, calls.reads.Load(), calls.due.Load(), "at most one journal read per claim")
	require.Equal(t, int64(regs), calls.advances.Load()+calls.batched.Load(), "one save per turn")
	t.Logf("%d claims, %d reads, %d plain advances, %d batches of %d saves", calls.due.Load(), calls.reads.Load(),
		calls.advances.Load(), calls.batches.Load(), calls.batched.Load())
}
