package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Unnumbering is what the backend of a store that numbers records after
// their commit (store/postgres) adds for the suite, so that it can see
// records wait: CommitUnnumbered commits entries as an application's own
// transaction does, with no sequencer running; Number numbers every record
// committed. Stores that number at append have no such records, and the
// suite checks that they report none.
type Unnumbering interface {
	CommitUnnumbered(ctx context.Context, stream string, entries ...journal.Entry) error
	Number(ctx context.Context) error
}

// testABacklogWaitingToBeNumberedIsVisible: records committed but not yet
// numbered are counted (Stats, Streams, a stream with no numbered record
// too), named (Lookup's *journal.UnnumberedError) and never shown as seq 0
// (a conflict with one says it waits); once numbered, they are counted no
// more.
func testABacklogWaitingToBeNumberedIsVisible(t *testing.T, b Backend) {
	ctx := t.Context()
	appendN(t, b, "s", 2)
	register(t, b, regFrom("s", "r", "webhook", 3))
	u, ok := b.(Unnumbering)
	if !ok {
		st, err := b.Stats(ctx, at(0))
		require.NoError(t, err)
		require.Equal(t, store.Unnumbered{}, st.Unnumbered, "a store that numbers at append has nothing waiting")
		info, _ := streamInfo(t, b, "s")
		require.Zero(t, info.Unnumbered)
		return
	}
	require.NoError(t, u.CommitUnnumbered(ctx, "s", entry("w-1"), entry("w-2")))
	require.NoError(t, u.CommitUnnumbered(ctx, "fresh", entry("w-3")))

	st, err := b.Stats(ctx, at(0))
	require.NoError(t, err)
	require.Equal(t, uint64(3), st.Unnumbered.Records)
	require.Equal(t, 2, st.Unnumbered.Streams)
	require.False(t, st.Unnumbered.Oldest.IsZero(), "the oldest waiting record's appended-at")
	require.Zero(t, st.Namespaces["webhook"].Behind, "no cursor is behind a record without a seq")
	info, ok := streamInfo(t, b, "s")
	require.True(t, ok)
	require.Equal(t, uint64(2), info.Head)
	require.Equal(t, uint64(2), info.Unnumbered)
	info, ok = streamInfo(t, b, "fresh")
	require.True(t, ok, "a stream whose only records wait is listed")
	require.Equal(t, uint64(0), info.Head)
	require.Equal(t, uint64(1), info.Unnumbered)

	_, err = b.Lookup(ctx, "w-2")
	require.ErrorIs(t, err, journal.ErrNotFound, "it cannot be read yet")
	var ue *journal.UnnumberedError
	require.True(t, errors.As(err, &ue), "%v", err)
	require.Equal(t, "s", ue.Record.Stream)
	require.Equal(t, "w-2", ue.Record.ID)
	require.Zero(t, ue.Record.Seq)
	require.Contains(t, err.Error(), "waiting to be numbered")
	require.Equal(t, []uint64{1, 2}, seqs(readAll(t, b, "s")))

	other := entry("w-1")
	other.Payload = []byte(`{"other":true}`)
	_, err = b.Append(ctx, "s", other)
	var ce *journal.ConflictError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.NotContains(t, err.Error(), "#0", "a record without a seq is not named by one")
	require.Contains(t, err.Error(), "waiting to be numbered")

	require.NoError(t, u.Number(ctx))
	st, err = b.Stats(ctx, at(0))
	require.NoError(t, err)
	require.Equal(t, store.Unnumbered{}, st.Unnumbered)
	require.Equal(t, uint64(2), st.Namespaces["webhook"].Behind)
	info, _ = streamInfo(t, b, "s")
	require.Equal(t, uint64(4), info.Head)
	require.Zero(t, info.Unnumbered)
	rec, err := b.Lookup(ctx, "w-2")
	require.NoError(t, err)
	require.Equal(t, uint64(4), rec.Seq)
}
