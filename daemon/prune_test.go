package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// The daemon's pruner removes, on the daemon's clock, what every cursor
// passed once older than --retain, in batches, and reports each pass.
func TestPrunerPass(t *testing.T) {
	s := memory.New(memory.WithClock(func() time.Time { return t0 }))
	ctx := t.Context()
	for i := range 2500 { // more than one batch
		_, err := s.Append(ctx, "orders", journal.Entry{ID: fmt.Sprintf("o-%d", i), Kind: "k", Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	_, err := s.Register(ctx, push.Registration{Stream: "orders", ID: "r", Namespace: "webhook", URL: "https://r.example/", NextSeq: 2001})
	require.NoError(t, err)

	now := t0.Add(6 * 24 * time.Hour)
	passes := make(chan store.PruneReport)
	d := &Daemon{store: s, opts: Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now },
		Prune: &Prune{Every: time.Hour, Retain: store.DefaultRetain}}, pruned: func(r store.PruneReport, err error) {
		require.NoError(t, err)
		passes <- r
	}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go d.prune(ctx)
	require.Zero(t, (<-passes).Records, "younger than 7 days: kept")

	now = t0.Add(8 * 24 * time.Hour)
	rep, err := d.prunePass(ctx)
	require.NoError(t, err)
	require.Equal(t, 2000, rep.Records, "up to the cursor, over two batches")
	require.False(t, rep.More)
	recs, err := s.Read(ctx, "orders", 1, 1, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(2001), recs[0].Seq)
}
