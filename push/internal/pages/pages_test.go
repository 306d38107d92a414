package pages

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
)

// sliceJournal is a journal of one stream held in a slice, counting reads.
type sliceJournal struct {
	journal.Journal // nil: only Read is used
	mu              sync.Mutex
	recs            []journal.Record
	reads           atomic.Int64
}

func (j *sliceJournal) add(n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for range n {
		seq := uint64(len(j.recs) + 1)
		j.recs = append(j.recs, journal.Record{Stream: "s", Seq: seq, ID: fmt.Sprintf("r%d", seq), Payload: []byte(fmt.Sprint(seq))})
	}
}

func (j *sliceJournal) Read(_ context.Context, stream string, from uint64, limit, maxBytes int) ([]journal.Record, error) {
	j.reads.Add(1)
	if err := journal.ValidateRead(stream, from, limit, maxBytes); err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	tail := j.recs[min(from-1, uint64(len(j.recs))):]
	return clonePage(tail[:journal.PageEnd(tail, limit, maxBytes)]), nil
}

func seqs(recs []journal.Record) []uint64 {
	out := []uint64{}
	for _, r := range recs {
		out = append(out, r.Seq)
	}
	return out
}

func span(from, to uint64) []uint64 {
	out := []uint64{}
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestPagesServeWhatAReadOfTheTurnsOwnWould(t *testing.T) {
	j := &sliceJournal{}
	j.add(10)
	p := New(j, time.Minute)
	claimed := time.Now()
	turn := WithClaim(t.Context(), claimed, 10)
	read := func(ctx context.Context, from uint64, limit int) []uint64 {
		t.Helper()
		recs, err := p.Read(ctx, "s", from, limit, 0)
		require.NoError(t, err)
		return seqs(recs)
	}

	require.Equal(t, span(1, 10), read(turn, 1, 256))
	require.EqualValues(t, 1, j.reads.Load())
	require.Equal(t, span(5, 10), read(turn, 5, 256), "inside the page, to its end, which reached the journal's")
	require.Equal(t, span(2, 4), read(turn, 2, 3), "a shorter limit")
	require.EqualValues(t, 1, j.reads.Load(), "all three from the one read")

	j.add(5)
	require.Equal(t, span(5, 15), read(WithClaim(t.Context(), claimed, 15), 5, 256),
		"a claim that knew of records past the page's end reads for itself")
	require.EqualValues(t, 2, j.reads.Load())

	require.Equal(t, span(5, 15), read(WithClaim(t.Context(), time.Now(), 15), 5, 256),
		"a page read before the claim stands for none of its turns")
	require.EqualValues(t, 3, j.reads.Load())

	require.Equal(t, span(3, 15), read(t.Context(), 3, 256), "a read outside a turn goes to the journal")
	require.EqualValues(t, 4, j.reads.Load())
	require.Equal(t, span(3, 15), read(WithClaim(t.Context(), time.Now(), 15), 3, 256), "read, and kept")
	require.EqualValues(t, 5, j.reads.Load())

	now := WithClaim(t.Context(), claimed, 15)
	recs, err := p.Read(now, "s", 3, 2, 0)
	require.NoError(t, err)
	require.EqualValues(t, 5, j.reads.Load(), "served from the page read at 3")
	recs[0].Payload[0] = 'X'
	recs, err = p.Read(now, "s", 3, 2, 0)
	require.NoError(t, err)
	require.Equal(t, "3", string(recs[0].Payload), "each turn gets its own copy of the payloads")

	_, err = p.Read(now, "s", 0, 1, 0)
	require.ErrorIs(t, err, journal.ErrInvalid, "bad input gets the journal's error")
}

// A page answers a read by the read's own byte bound; one that its byte
// bound cut stands, to its end, only for a claim that knew of no record
// past it.
func TestPagesAnswerAReadByItsOwnByteBound(t *testing.T) {
	j := &sliceJournal{}
	j.add(10)
	for i := range j.recs {
		j.recs[i].Payload = make([]byte, 100)
	}
	p := New(j, time.Minute)
	claimed := time.Now()
	knew4, knew10 := WithClaim(t.Context(), claimed, 4), WithClaim(t.Context(), claimed, 10)
	read := func(ctx context.Context, from uint64, limit, maxBytes int) []uint64 {
		t.Helper()
		recs, err := p.Read(ctx, "s", from, limit, maxBytes)
		require.NoError(t, err)
		return seqs(recs)
	}

	require.Equal(t, span(1, 4), read(knew10, 1, 256, 450))
	require.EqualValues(t, 1, j.reads.Load())
	require.Equal(t, span(2, 3), read(knew10, 2, 256, 250), "the read's own bound stops within the page")
	require.Equal(t, span(3, 3), read(knew10, 3, 256, 1), "one record larger than the bound")
	require.Equal(t, span(2, 4), read(knew4, 2, 256, 450), "to the page's end: the claim knew of no record past it")
	require.EqualValues(t, 1, j.reads.Load(), "all from the one read")

	require.Equal(t, span(2, 5), read(knew10, 2, 256, 450), "the claim knew of #5, and the bound has room for it")
	require.EqualValues(t, 2, j.reads.Load())
}

func TestPagesBoundTheirMemory(t *testing.T) {
	j := &sliceJournal{}
	j.add(1)
	j.recs[0].Payload = make([]byte, pagesMaxBytes/4+1)
	p := New(j, time.Minute)
	turn := WithClaim(t.Context(), time.Now(), 1)
	for range 2 {
		recs, err := p.Read(turn, "s", 1, 10, 0)
		require.NoError(t, err)
		require.Len(t, recs, 1)
	}
	require.EqualValues(t, 2, j.reads.Load(), "a page above a quarter of the budget is not kept")
	require.Zero(t, p.bytes)

	// Many streams: the oldest pages go first, the total stays bounded.
	many := &streamsJournal{payload: make([]byte, 64<<10)}
	p = New(many, time.Minute)
	turn = WithClaim(t.Context(), time.Now(), 1)
	for i := range 1000 {
		_, err := p.Read(turn, fmt.Sprintf("s%d", i), 1, 1, 0)
		require.NoError(t, err)
		require.LessOrEqual(t, p.bytes, pagesMaxBytes)
	}
	require.Less(t, len(p.streams), 1000)
	require.Equal(t, len(p.streams), p.order.Len())
	_, err := p.Read(turn, "s999", 1, 1, 0)
	require.NoError(t, err)
	require.EqualValues(t, 1000, many.reads.Load(), "the newest page is kept")
}

// streamsJournal has one record in every stream.
type streamsJournal struct {
	journal.Journal
	payload []byte
	reads   atomic.Int64
}

func (j *streamsJournal) Read(_ context.Context, stream string, from uint64, limit, _ int) ([]journal.Record, error) {
	j.reads.Add(1)
	if from > 1 {
		return []journal.Record{}, nil
	}
	return []journal.Record{{Stream: stream, Seq: 1, ID: stream + "#1", Payload: j.payload}}, nil
}

func TestPagesUnderConcurrentTurns(t *testing.T) {
	j := &sliceJournal{}
	j.add(60)
	p := New(j, time.Minute)
	turn := WithClaim(t.Context(), time.Now(), 60)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 200 {
				from, limit := uint64((g*7+i)%20+1), (i%3)*10+5
				recs, err := p.Read(turn, "s", from, limit, 0)
				if err != nil {
					t.Error(err)
					return
				}
				want := span(from, min(from+uint64(limit)-1, 60))
				if got := seqs(recs); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("read %d+%d: got %v, want %v", from, limit, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Less(t, j.reads.Load(), int64(32*200), "some reads were shared")
}

// Registrations at different cursors of one stream keep a page each: a
// read from one place no longer evicts the page read from another.
func TestPagesKeepAPagePerPlace(t *testing.T) {
	j := &sliceJournal{}
	j.add(30)
	p := New(j, time.Minute)
	turn := WithClaim(t.Context(), time.Now(), 30)
	for range 3 {
		for _, from := range []uint64{1, 11, 21} {
			recs, err := p.Read(turn, "s", from, 5, 0)
			require.NoError(t, err)
			require.Equal(t, span(from, from+4), seqs(recs))
		}
	}
	require.EqualValues(t, 3, j.reads.Load(), "one read per place, each page kept beside the others")

	for from := uint64(1); from <= pagesPerStream+1; from++ {
		_, err := p.Read(turn, "s", 100+from, 1, 0) // past the end: empty reads are not kept
		require.NoError(t, err)
	}
	require.LessOrEqual(t, len(p.streams["s"]), pagesPerStream)
	_, err := p.Read(turn, "s", 21, 5, 0)
	require.NoError(t, err)
	require.EqualValues(t, 3+pagesPerStream+1, j.reads.Load(), "still served from its page")

	// A stream's pages are bounded: the oldest goes first.
	p = New(j, time.Minute)
	for from := uint64(1); from <= pagesPerStream+1; from++ {
		_, err := p.Read(turn, "s", from, 1, 0)
		require.NoError(t, err)
	}
	require.Len(t, p.streams["s"], pagesPerStream)
	require.Equal(t, pagesPerStream, p.order.Len())
	require.EqualValues(t, 2, p.streams["s"][0].from, "the page read from 1 went first")
}

// A page no other turn can use is handed out as read, not copied; a kept
// page is copied for each turn (TestPagesServeWhatAReadOfTheTurnsOwnWould).
func TestPagesCopyOnlyWhatAnotherTurnCanUse(t *testing.T) {
	big := &streamsJournal{payload: make([]byte, pagesMaxBytes/4+1)}
	p := New(big, time.Minute)
	turn := WithClaim(t.Context(), time.Now(), 1)
	recs, err := p.Read(turn, "s", 1, 10, 0)
	require.NoError(t, err)
	require.Same(t, &big.payload[0], &recs[0].Payload[0], "a page too big to keep is the caller's alone")

	small := &streamsJournal{payload: []byte("x")}
	p = New(small, time.Minute)
	recs, err = p.Read(turn, "s", 1, 10, 0)
	require.NoError(t, err)
	require.NotSame(t, &small.payload[0], &recs[0].Payload[0], "a kept page is copied for its reader")
}
