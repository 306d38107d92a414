package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
)

// TestPruneKeepsRefusedRecordsForTheRetentionAge: a record the sequencer
// refused (it committed after its stream's final record) stays for an
// operator to see for the retention age, and keeps its sealed stream from
// being removed; past the age both go.
func TestPruneKeepsRefusedRecordsForTheRetentionAge(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, migratedURL(t))
	late := openTx(t, s)
	_, err := s.AppendTx(ctx, late, "t", entry("t-late"))
	require.NoError(t, err)
	final := entry("t-end")
	final.Final = true
	_, err = s.Append(ctx, "t", final)
	require.NoError(t, err)
	require.NoError(t, late.Commit(ctx))
	_, err = s.Sequence(ctx)
	require.NoError(t, err)
	refused, err := s.Refused(ctx, "t", 10)
	require.NoError(t, err)
	require.Len(t, refused, 1)

	prune := func(at time.Time) store.PruneReport {
		var total store.PruneReport
		for {
			rep, err := s.Prune(ctx, store.PruneQuery{At: at, Retain: time.Hour})
			require.NoError(t, err)
			total = total.Add(rep)
			if !rep.More {
				return total
			}
		}
	}
	require.Zero(t, prune(time.Now()).Removed, "young: kept")
	refused, err = s.Refused(ctx, "t", 10)
	require.NoError(t, err)
	require.Len(t, refused, 1, "the refused record is still there to see")

	rep := prune(time.Now().Add(2 * time.Hour))
	require.Equal(t, 1, rep.Removed, "past the age, the sealed stream and its refused record go")
	refused, err = s.Refused(ctx, "t", 10)
	require.NoError(t, err)
	require.Empty(t, refused)
	infos, err := s.Streams(ctx, store.StreamQuery{Stream: "t"})
	require.NoError(t, err)
	require.Empty(t, infos)
}
