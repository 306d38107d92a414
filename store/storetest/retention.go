package storetest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

var retentionTests = []test{
	testLowWaterMarkWaitsForEveryCursor, testRetentionAgeOnTheCallersClock, testSealedCompletedStreamIsRemoved,
	testNoCursorBelowTheLowWaterMark, testDryRunReportsOneWholePassAndChangesNothing, testBatchesAreBounded,
	testEvidenceTailKeepsTheParkReason, testBadRetentionQueryChangesNothing, testPruneRacesAppendsAndSweeps,
}

// later is h hours from now: stores stamp AppendedAt on the real clock, and
// the suite prunes hours away from it, never waiting.
func later(h int) time.Time { return time.Now().Add(time.Duration(h) * time.Hour) }

func prune(t *testing.T, b Backend, q store.PruneQuery) store.PruneReport {
	t.Helper()
	rep, err := b.Prune(t.Context(), q)
	require.NoError(t, err)
	return rep
}

// pruneAll prunes in batches until nothing more is due.
func pruneAll(t *testing.T, b Backend, q store.PruneQuery) store.PruneReport {
	t.Helper()
	var total store.PruneReport
	for range 1000 {
		rep := prune(t, b, q)
		total = total.Add(rep)
		if !rep.More {
			total.More = false
			return total
		}
	}
	t.Fatal("prune did not finish in 1000 batches")
	return total
}

func streamInfo(t *testing.T, b Backend, name string) (store.StreamInfo, bool) {
	t.Helper()
	infos, err := b.Streams(t.Context(), store.StreamQuery{Stream: name})
	require.NoError(t, err)
	if len(infos) == 0 {
		return store.StreamInfo{}, false
	}
	require.Len(t, infos, 1)
	return infos[0], true
}

func seqs(recs []journal.Record) []uint64 {
	return mapped(recs, func(r journal.Record) uint64 { return r.Seq })
}

func readAll(t *testing.T, b Backend, stream string) []journal.Record {
	t.Helper()
	recs, err := b.Read(t.Context(), stream, 1, 1000, 0)
	require.NoError(t, err)
	return recs
}

func testLowWaterMarkWaitsForEveryCursor(t *testing.T, b Backend) {
	recs := appendN(t, b, "s", 5)
	register(t, b, regFrom("s", "fast", "webhook", 4))
	register(t, b, reg("s", "parked", "webhook"))
	require.NoError(t, b.Advance(t.Context(), claim(t, b, "s", "parked", at(0)), 2))
	require.NoError(t, b.Park(t.Context(), claim(t, b, "s", "parked", at(1)), 2, store.Evidence{At: at(1), Error: "410 Gone"}))

	told, toldBytes := heraldEventTotals(t, b) // the park's event, pruned with them
	rep := pruneAll(t, b, store.PruneQuery{At: later(1)})
	require.Equal(t, 1+told, rep.Records, "the parked registration holds #2 on")
	require.Equal(t, 2, rep.Streams, "s and herald/events")
	require.Equal(t, int64(len(recs[0].Payload))+toldBytes, rep.Bytes)
	require.Equal(t, []uint64{2, 3, 4, 5}, seqs(readAll(t, b, "s")), "a read from before the low-water mark starts at it")
	info, ok := streamInfo(t, b, "s")
	require.True(t, ok)
	require.Equal(t, store.StreamInfo{Stream: "s", Head: 5, OldestSeq: 2, Registrations: 2, Records: 4,
		Bytes: int64(len(recs[1].Payload) + len(recs[2].Payload) + len(recs[3].Payload) + len(recs[4].Payload))}, info)
	require.ErrorIs(t, errOf(b.Lookup(t.Context(), recs[0].ID)), journal.ErrNotFound, "a pruned record is gone")

	// Skipping the parked one past the records lets them go, up to the
	// other cursor.
	require.NoError(t, b.Skip(t.Context(), "s", "parked", 6, at(2), "operator"))
	pruneAll(t, b, store.PruneQuery{At: later(1)})
	require.Equal(t, []uint64{4, 5}, seqs(readAll(t, b, "s")))
	require.Equal(t, uint64(6), get(t, b, "s", "parked").NextSeq, "pruning moves no cursor")
	require.Equal(t, uint64(4), get(t, b, "s", "fast").NextSeq)
}

// testRetentionAgeOnTheCallersClock: records older than the retention age at
// the caller's instant go once every registration acknowledged them, and a
// stream nobody follows keeps its records that long; both keep their heads,
// so appends continue their seqs.
func testRetentionAgeOnTheCallersClock(t *testing.T, b Backend) {
	for _, stream := range []string{"acknowledged", "lonely"} {
		appendN(t, b, stream, 3)
		registrations := 0
		if stream == "acknowledged" {
			register(t, b, regFrom(stream, "r", "webhook", 4))
			registrations = 1
		}
		require.Zero(t, pruneAll(t, b, store.PruneQuery{At: later(0), Retain: time.Hour}).Records, "%s: records younger than the retention age stay", stream)
		require.Len(t, readAll(t, b, stream), 3)
		require.Equal(t, 3, pruneAll(t, b, store.PruneQuery{At: later(2), Retain: time.Hour}).Records, "%s: older than the age at the caller's instant: gone", stream)
		info, ok := streamInfo(t, b, stream)
		require.True(t, ok, "an unsealed stream stays, with its head")
		require.Equal(t, store.StreamInfo{Stream: stream, Head: 3, OldestSeq: 4, Registrations: registrations}, info, "none retained: head+1")
		recs, err := b.Append(t.Context(), stream, entry(stream+"-after-prune"))
		require.NoError(t, err)
		require.Equal(t, uint64(4), recs[0].Seq, "appends continue the stream's seqs")
	}
}

func testSealedCompletedStreamIsRemoved(t *testing.T, b Backend) {
	require.NoError(t, errOf(b.Append(t.Context(), "task/1", entry("t1"), journal.Entry{ID: "t2", Kind: "done", Payload: []byte(`{}`), Final: true})))
	register(t, b, reg("task/1", "push", "webhook"))
	require.NoError(t, b.Complete(t.Context(), claim(t, b, "task/1", "push", at(0))))

	require.Zero(t, pruneAll(t, b, store.PruneQuery{At: later(0), Retain: time.Hour}).Removed, "within the retention age it stays")
	told, _ := heraldEventTotals(t, b) // the completion's event
	rep := pruneAll(t, b, store.PruneQuery{At: later(2), Retain: time.Hour})
	require.Equal(t, 1, rep.Removed)
	require.Equal(t, 2+told, rep.Records)
	_, ok := streamInfo(t, b, "task/1")
	require.False(t, ok, "a sealed stream whose registrations completed leaves nothing behind")
	require.Zero(t, head(t, b, "task/1"))

	// A sealed stream still followed is kept whatever its age.
	require.NoError(t, errOf(b.Append(t.Context(), "task/2", journal.Entry{ID: "u1", Kind: "done", Payload: []byte(`{}`), Final: true})))
	register(t, b, reg("task/2", "slow", "webhook"))
	require.Zero(t, pruneAll(t, b, store.PruneQuery{At: later(2), Retain: time.Hour}).Removed)
	_, ok = streamInfo(t, b, "task/2")
	require.True(t, ok)
}

func testNoCursorBelowTheLowWaterMark(t *testing.T, b Backend) {
	appendN(t, b, "s", 4)
	register(t, b, regFrom("s", "r", "webhook", 3))
	pruneAll(t, b, store.PruneQuery{At: later(1)})
	require.Equal(t, []uint64{3, 4}, seqs(readAll(t, b, "s")))

	err := b.Rewind(t.Context(), "s", "r", 2, at(5))
	var pe *store.PrunedError
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, store.PrunedError{Stream: "s", Seq: 2, OldestSeq: 3}, *pe)
	require.ErrorIs(t, err, journal.ErrInvalid)
	require.Contains(t, err.Error(), "#3", "the refusal names the oldest retained seq")
	st := get(t, b, "s", "r")
	require.Equal(t, uint64(3), st.NextSeq, "a refused rewind changes nothing")
	require.True(t, st.NextAttemptAt.Before(at(5)))
	require.NoError(t, b.Rewind(t.Context(), "s", "r", 3, at(5)), "to the low-water mark itself is allowed")

	_, err = b.Register(t.Context(), regFrom("s", "new-low", "webhook", 1))
	require.True(t, errors.As(err, &pe), "a new registration below the low-water mark: %v", err)
	require.ErrorIs(t, errOf(b.Get(t.Context(), "s", "new-low")), journal.ErrNotFound, "nothing was registered")
	require.Equal(t, uint64(3), register(t, b, reg("s", "new-default", "webhook")).NextSeq, "NextSeq 0 starts at the oldest retained record")
}

// A dry run reports one whole pass in one call, over more streams than a
// store visits in one batch (sqlite 500, postgres 200), and changes nothing.
func testDryRunReportsOneWholePassAndChangesNothing(t *testing.T, b Backend) {
	appendN(t, b, "s", 3)
	for i := range 600 {
		appendN(t, b, fmt.Sprintf("many/%03d", i), 1)
	}
	q := store.PruneQuery{At: later(2), Retain: time.Hour, DryRun: true}
	dry := prune(t, b, q)
	require.False(t, dry.More, "one call reports the whole pass")
	require.Equal(t, 603, dry.Records)
	require.Equal(t, dry, prune(t, b, q), "a second dry run reports the same")
	require.Len(t, readAll(t, b, "s"), 3, "a dry run removes nothing")
	info, _ := streamInfo(t, b, "s")
	require.Equal(t, uint64(1), info.OldestSeq)
	wet := pruneAll(t, b, store.PruneQuery{At: later(2), Retain: time.Hour})
	require.Equal(t, dry, wet, "the dry run reported what the real one removed")
}

func testBatchesAreBounded(t *testing.T, b Backend) {
	appendN(t, b, "a", 4)
	appendN(t, b, "b", 3)
	q := store.PruneQuery{At: later(1), Limit: 3}
	var batches []int
	total := 0
	for range 10 {
		rep := prune(t, b, q)
		require.LessOrEqual(t, rep.Records, 3)
		batches, total = append(batches, rep.Records), total+rep.Records
		if !rep.More {
			break
		}
	}
	require.Equal(t, 7, total, "batches %v", batches)
	require.Greater(t, len(batches), 2, "a batch removes at most Limit records")
	require.Empty(t, readAll(t, b, "a"))
	require.Empty(t, readAll(t, b, "b"))
}

func testEvidenceTailKeepsTheParkReason(t *testing.T, b Backend) {
	streamWithReg(t, b, 1)
	for i := range 3 {
		require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(i*10)), 1, at(i*10+5), store.Evidence{At: at(i * 10), Error: fmt.Sprintf("503 #%d", i)}))
	}
	require.NoError(t, b.Park(t.Context(), claim(t, b, "s", "r", at(40)), 1, store.Evidence{At: at(40), Event: store.EventParked, Error: "410 Gone"}))
	require.NoError(t, b.AddEvidence(t.Context(), store.Evidence{Stream: "s", Registration: "r", At: at(3600), Event: store.EventSkipped, Error: "recent"}))

	rep := pruneAll(t, b, store.PruneQuery{At: at(3600), Retain: time.Hour / 2})
	require.Equal(t, 3, rep.Evidence, "the three old failures go")
	require.Equal(t, []string{"recent", "410 Gone"}, mapped(evidence(t, b, "s", "r"), func(ev store.Evidence) string { return ev.Error }),
		"the newest rows and, however old, the reason it is parked")
	told, _ := heraldEventTotals(t, b)
	require.Equal(t, told, prune(t, b, store.PruneQuery{At: later(1)}).Records, "the parked cursor at #1 holds #1 (herald's own events go)")
}

func testBadRetentionQueryChangesNothing(t *testing.T, b Backend) {
	appendN(t, b, "s", 2)
	for name, q := range map[string]store.PruneQuery{
		"zero at":          {},
		"negative retain":  {At: later(1), Retain: -time.Second},
		"negative limit":   {At: later(1), Limit: -1},
		"limit over max":   {At: later(1), Limit: store.MaxPruneBatch + 1},
		"dry, zero at too": {DryRun: true},
	} {
		require.ErrorIs(t, errOf(b.Prune(t.Context(), q)), journal.ErrInvalid, name)
	}
	require.Len(t, readAll(t, b, "s"), 2, "nothing was pruned")
	require.ErrorIs(t, errOf(b.Streams(t.Context(), store.StreamQuery{Limit: -1})), journal.ErrInvalid)
	require.ErrorIs(t, errOf(b.Streams(t.Context(), store.StreamQuery{Stream: " bad stream"})), journal.ErrInvalid)
}

// testPruneRacesAppendsAndSweeps: appends, sweeps and prunes (retention 0: as
// soon as acknowledged) race; every registration still receives every record
// once, in order, and no cursor is ever left below its stream's low-water
// mark.
func testPruneRacesAppendsAndSweeps(t *testing.T, b Backend) {
	const streams, perStream, batch = 3, 120, 4
	rc := &receiver{}
	w := worker(t, b, rc, 7)
	for s := range streams {
		for _, id := range []string{"a", "b"} {
			register(t, b, reg(fmt.Sprintf("race/%d", s), id, "webhook"))
		}
	}
	var (
		g        errgroup.Group
		appended atomic.Bool
		stop     = make(chan struct{})
	)
	g.Go(func() error {
		defer appended.Store(true)
		for i := 0; i < perStream; i += batch {
			for s := range streams {
				stream := fmt.Sprintf("race/%d", s)
				if _, err := b.Append(t.Context(), stream, entries(stream, perStream)[i:i+batch]...); err != nil {
					return err
				}
			}
		}
		return nil
	})
	g.Go(func() error {
		for {
			select {
			case <-stop:
				return nil
			default:
			}
			if _, err := b.Prune(t.Context(), store.PruneQuery{At: later(1), Limit: 5}); err != nil {
				return err
			}
		}
	})
	g.Go(func() error {
		defer close(stop)
		for i := 0; ; i++ {
			done := appended.Load()
			if _, err := w.RunOnce(t.Context(), at(i), 100); err != nil {
				return err
			}
			if done {
				caughtUp, err := allAtHead(t, b, streams)
				if err != nil || caughtUp {
					return err
				}
			}
			if i > 100000 {
				return fmt.Errorf("the sweeps did not catch up")
			}
		}
	})
	require.NoError(t, g.Wait())
	got := map[store.Key][]int{}
	for _, a := range rc.arrivals() {
		got[a.key] = append(got[a.key], a.n)
	}
	want := make([]int, perStream)
	for i := range want {
		want[i] = i + 1
	}
	for s := range streams {
		for _, id := range []string{"a", "b"} {
			k := store.Key{Stream: fmt.Sprintf("race/%d", s), ID: id}
			require.Equal(t, want, got[k], "%v received every record once, in order", k)
		}
	}
}

func allAtHead(t *testing.T, b Backend, streams int) (bool, error) {
	for s := range streams {
		name := fmt.Sprintf("race/%d", s)
		sts, err := b.List(t.Context(), store.ListQuery{Stream: name})
		if err != nil {
			return false, err
		}
		infos, err := b.Streams(t.Context(), store.StreamQuery{Stream: name})
		if err != nil || len(infos) != 1 {
			return false, fmt.Errorf("stream %s: %v %v", name, infos, err)
		}
		for _, st := range sts {
			if st.NextSeq < infos[0].OldestSeq {
				return false, fmt.Errorf("%s/%s: cursor #%d below the low-water mark #%d", name, st.ID, st.NextSeq, infos[0].OldestSeq)
			}
			if st.NextSeq <= st.Head {
				return false, nil
			}
		}
	}
	return true, nil
}
