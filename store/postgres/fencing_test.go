package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
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
			_, err := s.Register(ctx, push.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: "https://receiver.example/r"})
			require.NoError(t, err)
			batch, err := s.Due(ctx, push.DueQuery{At: at(0), Limit: 1, Namespace: "webhook", Owner: "w1", LeaseUntil: at(60)})
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
				done <- s.Retry(ctx, claim, 3, at(30), push.Evidence{At: at(1), Event: push.EventFailed, Error: "503"})
			}()
			waitForLockWait(t, s)
			require.NoError(t, other.Commit(ctx))
			err = <-done

			st, gerr := s.Get(ctx, "s", "r")
			require.NoError(t, gerr)
			evs, eerr := s.Evidence(ctx, "s", "r", 0)
			require.NoError(t, eerr)
			if c.lost {
				require.ErrorIs(t, err, push.ErrLeaseLost)
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
