package sqlite_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
	"github.com/heraldpush/herald/store/storetest"
)

// TestConcurrentAppendsAndSweeps: goroutines append to one hot stream and to
// many cold ones while two workers sweep. Seqs stay gapless, no caller ever
// sees "database is locked", and when the appends stop, one more sweep
// brings every cursor to its stream's head (no wake-up was lost).
func TestConcurrentAppendsAndSweeps(t *testing.T) {
	ctx := context.Background()
	s := sqlite.OpenTemp(t)
	rc := newReceiver(t, func(string, int) int { return http.StatusOK })
	const appenders, each, colds = 8, 25, 10

	streams := map[string]uint64{"hot": appenders * each} // stream → records expected
	register := func(stream, id string) {
		_, err := s.Register(ctx, store.Registration{Stream: stream, ID: id, Namespace: "webhook", URL: rc.URL + "/" + id})
		require.NoError(t, err)
	}
	for _, id := range []string{"r0", "r1", "r2"} {
		register("hot", id)
	}
	for i := range colds {
		stream := fmt.Sprintf("cold/%d", i)
		streams[stream] = appenders * each / colds * 2
		register(stream, "r")
	}

	var (
		clock atomic.Int64 // sweeps take successive instants, t0 + n s
		wake  = make(chan struct{}, 1)
		stop  = make(chan struct{})
		errs  = make(chan error, 4*appenders*each)
	)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	var sweepers sync.WaitGroup
	for n := range 2 {
		w, err := push.NewWorker(s, s, rc.transport(), storetest.PayloadProjection{}, push.WithOwner(fmt.Sprintf("sweeper-%d", n)),
			push.WithDrainPage(16))
		require.NoError(t, err)
		sweepers.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-wake:
				}
				at := t0.Add(time.Duration(clock.Add(1)) * time.Second)
				if _, err := w.RunOnce(ctx, at, 8); err != nil {
					errs <- fmt.Errorf("sweep at %v: %w", at, err)
				}
			}
		})
	}
	var appending sync.WaitGroup
	for a := range appenders {
		appending.Go(func() {
			for i := range each {
				if _, err := s.Append(ctx, "hot", entryN(fmt.Sprintf("hot-%d-%d", a, i))); err != nil {
					errs <- err
				}
				poke()
				cold := fmt.Sprintf("cold/%d", (a*each+i)%colds)
				if _, err := s.Append(ctx, cold, entryN(fmt.Sprintf("cold-%d-%d-a", a, i)), entryN(fmt.Sprintf("cold-%d-%d-b", a, i))); err != nil {
					errs <- err
				}
				poke()
			}
		})
	}
	appending.Wait()
	close(stop)
	sweepers.Wait()
	close(errs)
	for err := range errs {
		require.NotContains(t, strings.ToLower(err.Error()), "locked")
		require.NotContains(t, strings.ToLower(err.Error()), "busy")
		require.NoError(t, err)
	}

	for stream, n := range streams {
		recs, err := s.Read(ctx, stream, 1, int(n)+10, 0)
		require.NoError(t, err)
		require.Len(t, recs, int(n), "every append to %s is stored once", stream)
		for i, r := range recs {
			require.Equal(t, uint64(i+1), r.Seq, "%s is gapless", stream)
		}
	}

	// One more sweep, past every lease, with a page that holds any backlog.
	w, err := push.NewWorker(s, s, rc.transport(), storetest.PayloadProjection{}, push.WithOwner("final"), push.WithDrainPage(1000))
	require.NoError(t, err)
	final := t0.Add(time.Duration(clock.Load())*time.Second + time.Hour)
	_, err = w.RunOnce(ctx, final, 100)
	require.NoError(t, err)
	all, err := s.List(ctx, store.ListQuery{})
	require.NoError(t, err)
	require.Len(t, all, 3+colds)
	for _, st := range all {
		require.Equal(t, st.Head+1, st.NextSeq, "%s/%s reached the head in one more sweep", st.Stream, st.ID)
		require.Equal(t, streams[st.Stream], st.Head)
	}
	batch, err := s.Due(ctx, store.DueQuery{At: final.Add(time.Hour), Limit: 10, Namespace: "webhook", Owner: "x", LeaseUntil: final.Add(2 * time.Hour)})
	require.NoError(t, err)
	require.Empty(t, batch.Registrations, "nothing is due once every cursor is at its head")
}

func entryN(id string) journal.Entry {
	return journal.Entry{ID: id, Kind: "test.event", Payload: []byte(fmt.Sprintf(`{"id":%q}`, id))}
}

// TestTwoStoresShareOneFile: two Stores on one file stand for two processes
// (a daemon and a CLI command). Their writers contend for SQLite's own lock,
// which BEGIN IMMEDIATE and the busy timeout turn into waiting, not errors.
func TestTwoStoresShareOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	var stores []*sqlite.Store
	for range 2 {
		s, err := sqlite.Open(ctx, path)
		require.NoError(t, err)
		defer s.Close()
		stores = append(stores, s)
	}
	const each = 30
	errs := make(chan error, 2*2*each)
	var wg sync.WaitGroup
	for n, s := range stores {
		for g := range 2 {
			wg.Go(func() {
				for i := range each {
					if _, err := s.Append(ctx, "shared", entryN(fmt.Sprintf("s%d-g%d-%d", n, g, i))); err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	recs, err := stores[1].Read(ctx, "shared", 1, 1000, 0)
	require.NoError(t, err)
	require.Len(t, recs, 2*2*each)
	for i, r := range recs {
		require.Equal(t, uint64(i+1), r.Seq, "gapless across both writers")
	}
}
