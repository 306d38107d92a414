package push_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

func (f *fixture) countingWorker(opts ...push.Option) (*push.Worker, *countingJournal) {
	f.t.Helper()
	j := &countingJournal{Journal: f.store, reads: map[string]int{}}
	w, err := push.NewWorker(j, f.store, f.recv, f.proj, append([]push.Option{push.WithOwner("w1")}, opts...)...)
	require.NoError(f.t, err)
	return w, j
}

func TestTurnsOfOneClaimShareOneRead(t *testing.T) {
	f := newFixture(t)
	f.append("s", 10)
	for i := range 50 {
		f.register("s", fmt.Sprintf("r%d", i))
	}
	w, j := f.countingWorker(push.WithMaxInFlight(50))
	rep := f.sweep(w, at(1))
	require.Equal(t, 500, rep.Deliveries)
	require.Equal(t, 1, j.reads["s"], "50 turns of one claim, one stream, one cursor: one journal read")
	for i := range 50 {
		require.Equal(t, seqIDs("s", 1, 10), f.recv.ids(fmt.Sprintf("s/r%d", i)), "each registration in order")
	}
}

func TestAPageReadBeforeAClaimStandsForNoTurnOfIt(t *testing.T) {
	// The hazard: a stream sealed, completed, pruned away and started anew
	// under the same name has new records at the old seqs.
	f := newFixture(t)
	ctx := t.Context()
	_, err := f.store.Append(ctx, "s", journal.Entry{ID: "old-1", Kind: "k", Payload: []byte(`{}`)}, journal.Entry{ID: "old-2", Kind: "k", Payload: []byte(`{}`), Final: true})
	require.NoError(t, err)
	f.register("s", "first")
	w, j := f.countingWorker()
	rep := f.sweep(w, at(1))
	require.Equal(t, 1, rep.Completed)
	pr, err := f.store.Prune(ctx, store.PruneQuery{At: at(2)})
	require.NoError(t, err)
	require.Equal(t, 1, pr.Removed, "the sealed, completed stream is gone")

	_, err = f.store.Append(ctx, "s", journal.Entry{ID: "new-1", Kind: "k", Payload: []byte(`{}`)}, journal.Entry{ID: "new-2", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	f.register("s", "second")
	f.sweep(w, at(3))
	require.Equal(t, []string{"new-1", "new-2"}, f.recv.ids("s/second"), "the new stream's records, not the cached old ones")
	require.Equal(t, 2, j.reads["s"])
}
