package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
)

var journalTests = []test{
	testSeqsStartAtOnePerStream, testReadRangesAndLimits, testReadStopsAtItsByteBound, testRecordRoundTrip, testIdempotentAppend,
	testConflictChangesNothing, testBatchIsAllOrNothing, testFinalRecordSealsStream,
	testBadJournalInputChangesNothing, testConcurrentAppendsAreGapless, testTraceContextStoredWithTheRecord,
	testABacklogWaitingToBeNumberedIsVisible, testJSONNullIsAPayloadNotAnAbsence,
}

func testSeqsStartAtOnePerStream(t *testing.T, b Backend) {
	require.Zero(t, head(t, b, "actor/alice"), "head of a stream with no records")
	recs := appendN(t, b, "actor/alice", 3)
	for i, r := range recs {
		require.Equal(t, uint64(i+1), r.Seq)
		require.Equal(t, "actor/alice", r.Stream)
	}
	other := appendN(t, b, "actor/bob", 2)
	require.Equal(t, uint64(1), other[0].Seq, "each stream has its own seqs")
	more, err := b.Append(t.Context(), "actor/alice", entry("late-1"), entry("late-2"))
	require.NoError(t, err)
	require.Equal(t, []uint64{4, 5}, seqs(more))
	require.Equal(t, uint64(5), head(t, b, "actor/alice"))
	require.Equal(t, uint64(2), head(t, b, "actor/bob"))
}

func testReadRangesAndLimits(t *testing.T, b Backend) {
	appendN(t, b, "s", 10)
	cases := []struct {
		from  uint64
		limit int
		want  []uint64
	}{
		{1, 3, []uint64{1, 2, 3}},
		{4, 2, []uint64{4, 5}},
		{9, 100, []uint64{9, 10}},
		{10, 1, []uint64{10}},
		{11, 5, []uint64{}},
		{1000, 5, []uint64{}},
	}
	for _, c := range cases {
		recs, err := b.Read(t.Context(), "s", c.from, c.limit, 0)
		require.NoError(t, err)
		require.NotNil(t, recs, "Read returns an empty slice, not nil")
		require.Equal(t, c.want, seqs(recs), "Read(from %d, limit %d)", c.from, c.limit)
	}
	recs, err := b.Read(t.Context(), "never-written", 1, 10, 0)
	require.NoError(t, err)
	require.Empty(t, recs)
}

// A page stops before the record whose payload would take its total past
// maxBytes; its first record comes whatever its size, and limit still holds.
func testReadStopsAtItsByteBound(t *testing.T, b Backend) {
	sizes := []int{100, 200, 300, 100_000, 50, 50, 0, 10} // seq 4 is stored out of line where a store does (TOAST)
	in := make([]journal.Entry, len(sizes))
	rnd := rand.New(rand.NewPCG(1, 2)) // incompressible
	for i, n := range sizes {
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rnd.Uint32())
		}
		in[i] = journal.Entry{ID: fmt.Sprintf("b%d", i+1), Kind: "blob", ContentType: "application/octet-stream", Payload: p}
	}
	_, err := b.Append(t.Context(), "s", in...)
	require.NoError(t, err)
	cases := []struct {
		from            uint64
		limit, maxBytes int
		want            []uint64
	}{
		{1, 10, 0, []uint64{1, 2, 3, 4, 5, 6, 7, 8}},
		{1, 10, 600, []uint64{1, 2, 3}}, // a total equal to the bound is within it
		{1, 10, 599, []uint64{1, 2}},
		{1, 10, 1, []uint64{1}},
		{1, 2, 1 << 30, []uint64{1, 2}},
		{2, 10, 100_499, []uint64{2, 3}},
		{3, 10, 299, []uint64{3}},
		{4, 10, 1, []uint64{4}}, // larger than the bound: alone
		{4, 10, 100_099, []uint64{4, 5}},
		{4, 10, 100_100, []uint64{4, 5, 6, 7}}, // the empty payload fits in what is left
		{4, 3, 100_100, []uint64{4, 5, 6}},
		{7, 10, 9, []uint64{7}},
		{7, 10, 10, []uint64{7, 8}},
		{9, 10, 1, []uint64{}},
	}
	for _, c := range cases {
		recs, err := b.Read(t.Context(), "s", c.from, c.limit, c.maxBytes)
		require.NoError(t, err)
		require.NotNil(t, recs, "Read returns an empty slice, not nil")
		require.Equal(t, c.want, seqs(recs), "Read(from %d, limit %d, max bytes %d)", c.from, c.limit, c.maxBytes)
		for _, r := range recs {
			require.Equal(t, in[r.Seq-1].Payload, r.Payload, "#%d's payload", r.Seq)
		}
	}
}

func testRecordRoundTrip(t *testing.T, b Backend) {
	payload := []byte{0x00, 0xff, 0x10, 'h', 'e', 'r', 'a', 'l', 'd'}
	in := []journal.Entry{
		{ID: "https://example.com/activities/1", Kind: "Create", ContentType: "application/activity+json",
			Payload: []byte(`{"type":"Create","content":"héllo ✓"}`)},
		{ID: "bin-1", Kind: "blob", ContentType: "application/octet-stream", Payload: payload},
		{ID: "default-ct", Kind: "ping", Payload: []byte(`{}`)},
		{ID: "empty", Kind: "ping", ContentType: "text/plain", Payload: nil},
	}
	recs, err := b.Append(t.Context(), "task/8f3c", in...)
	require.NoError(t, err)
	require.Len(t, recs, len(in))
	require.Equal(t, journal.DefaultContentType, recs[2].ContentType, "empty content type defaults")

	stored, err := b.Read(t.Context(), "task/8f3c", 1, 10, 0)
	require.NoError(t, err)
	require.Len(t, stored, len(in))
	for i, r := range stored {
		require.Equal(t, recs[i].ID, r.ID)
		require.Equal(t, recs[i].Kind, r.Kind)
		require.Equal(t, recs[i].ContentType, r.ContentType)
		require.Equal(t, string(recs[i].Payload), string(r.Payload))
		require.Equal(t, recs[i].Final, r.Final)
		require.False(t, r.AppendedAt.IsZero(), "AppendedAt is stamped")
		requireTime(t, recs[i].AppendedAt, r.AppendedAt, "AppendedAt as returned by Append and Read")
	}
	require.Equal(t, payload, stored[1].Payload, "binary payloads survive byte for byte")
	require.Empty(t, stored[3].Payload)

	got, err := b.Lookup(t.Context(), "bin-1")
	require.NoError(t, err)
	require.Equal(t, "task/8f3c", got.Stream)
	require.Equal(t, uint64(2), got.Seq)
	require.Equal(t, payload, got.Payload)
	_, err = b.Lookup(t.Context(), "no-such-record")
	require.ErrorIs(t, err, journal.ErrNotFound)
}

func testIdempotentAppend(t *testing.T, b Backend) {
	first, err := b.Append(t.Context(), "s", entry("a"), entry("b"))
	require.NoError(t, err)
	again, err := b.Append(t.Context(), "s", entry("a"))
	require.NoError(t, err, "the same id with the same content is not an error")
	require.Equal(t, first[0].Seq, again[0].Seq, "the stored record comes back")
	requireTime(t, first[0].AppendedAt, again[0].AppendedAt, "stored AppendedAt")

	mixed, err := b.Append(t.Context(), "s", entry("b"), entry("c"))
	require.NoError(t, err)
	require.Equal(t, []uint64{2, 3}, seqs(mixed), "an existing id keeps its seq; a new one is appended")
	require.Equal(t, uint64(3), head(t, b, "s"), "nothing is written twice")
}

func testConflictChangesNothing(t *testing.T, b Backend) {
	_, err := b.Append(t.Context(), "s", entry("a"))
	require.NoError(t, err)
	cases := []struct {
		field  string
		stream string
		e      journal.Entry
	}{
		{"payload", "s", journal.Entry{ID: "a", Kind: "test.event", Payload: []byte(`{"id":"other"}`)}},
		{"kind", "s", journal.Entry{ID: "a", Kind: "other.kind", Payload: entry("a").Payload}},
		{"content type", "s", journal.Entry{ID: "a", Kind: "test.event", ContentType: "application/ld+json", Payload: entry("a").Payload}},
		{"final flag", "s", journal.Entry{ID: "a", Kind: "test.event", Payload: entry("a").Payload, Final: true}},
		{"stream", "elsewhere", entry("a")},
	}
	for _, c := range cases {
		_, err := b.Append(t.Context(), c.stream, c.e)
		require.ErrorIs(t, err, journal.ErrConflict, c.field)
		var ce *journal.ConflictError
		require.True(t, errors.As(err, &ce), "a *journal.ConflictError for %s", c.field)
		require.Equal(t, "a", ce.ID)
		require.Equal(t, c.field, ce.Field)
		require.Equal(t, uint64(1), ce.Seq)
	}
	require.Equal(t, uint64(1), head(t, b, "s"))
	require.Zero(t, head(t, b, "elsewhere"))
	got, err := b.Lookup(t.Context(), "a")
	require.NoError(t, err)
	require.Equal(t, string(entry("a").Payload), string(got.Payload), "the stored record is unchanged")
}

func testBatchIsAllOrNothing(t *testing.T, b Backend) {
	require.NoError(t, errOf(b.Append(t.Context(), "s", entry("a"))))
	bad := journal.Entry{ID: "a", Kind: "test.event", Payload: []byte(`{"changed":true}`)}
	require.ErrorIs(t, errOf(b.Append(t.Context(), "s", entry("new-1"), entry("new-2"), bad)), journal.ErrConflict)
	for _, id := range []string{"new-1", "new-2"} {
		require.ErrorIs(t, errOf(b.Lookup(t.Context(), id)), journal.ErrNotFound, "%s from a failed batch must not be stored", id)
	}
	require.Equal(t, uint64(1), head(t, b, "s"))

	// A seq is not burnt by a failed batch: the next append continues gaplessly.
	recs, err := b.Append(t.Context(), "s", entry("b"))
	require.NoError(t, err)
	require.Equal(t, uint64(2), recs[0].Seq)
}

func testFinalRecordSealsStream(t *testing.T, b Backend) {
	final := entry("done")
	final.Final = true
	recs, err := b.Append(t.Context(), "task/1", entry("working"), final)
	require.NoError(t, err)
	require.True(t, recs[1].Final)

	_, err = b.Append(t.Context(), "task/1", entry("after"))
	require.ErrorIs(t, err, journal.ErrSealed)
	var se *journal.SealedError
	require.True(t, errors.As(err, &se))
	require.Equal(t, uint64(2), se.FinalSeq)
	require.ErrorIs(t, errOf(b.Lookup(t.Context(), "after")), journal.ErrNotFound)

	again, err := b.Append(t.Context(), "task/1", final)
	require.NoError(t, err, "re-appending the final record itself is idempotent")
	require.Equal(t, uint64(2), again[0].Seq)

	midFinal := entry("x")
	midFinal.Final = true
	require.ErrorIs(t, errOf(b.Append(t.Context(), "task/2", midFinal, entry("y"))), journal.ErrInvalid, "only the last entry of a batch may be final")
	require.Zero(t, head(t, b, "task/2"))
}

func testBadJournalInputChangesNothing(t *testing.T, b Backend) {
	ok := entry("ok")
	with := func(f func(e *journal.Entry)) []journal.Entry { e := ok; f(&e); return []journal.Entry{e} }
	cases := []struct {
		name    string
		stream  string
		entries []journal.Entry
	}{
		{"empty stream", "", []journal.Entry{ok}},
		{"stream with a space", "actor alice", []journal.Entry{ok}},
		{"stream with a tab", "actor\talice", []journal.Entry{ok}},
		{"stream with a newline", "actor/alice\n", []journal.Entry{ok}},
		{"stream with NUL", "actor/\x00", []journal.Entry{ok}},
		{"stream of 201 bytes", strings.Repeat("s", journal.MaxStreamBytes+1), []journal.Entry{ok}},
		{"stream of 10000 bytes", strings.Repeat("s", 10000), []journal.Entry{ok}},
		{"stream not UTF-8", "actor/\xff\xfe", []journal.Entry{ok}},
		{"no entries", "s", nil},
		{"empty id", "s", with(func(e *journal.Entry) { e.ID = "" })},
		{"id with a newline", "s", with(func(e *journal.Entry) { e.ID = "a\nb" })},
		{"id with ESC", "s", with(func(e *journal.Entry) { e.ID = "a\x1b[31mred" })},
		{"id of 1025 bytes", "s", with(func(e *journal.Entry) { e.ID = strings.Repeat("i", journal.MaxIDBytes+1) })},
		{"id of 10000 bytes", "s", with(func(e *journal.Entry) { e.ID = strings.Repeat("i", 10000) })},
		{"empty kind", "s", with(func(e *journal.Entry) { e.Kind = "" })},
		{"kind with a space", "s", with(func(e *journal.Entry) { e.Kind = "a b" })},
		{"kind of 201 bytes", "s", with(func(e *journal.Entry) { e.Kind = strings.Repeat("k", journal.MaxKindBytes+1) })},
		{"bad content type", "s", with(func(e *journal.Entry) { e.ContentType = "not a/media type;;" })},
		{"invalid JSON payload", "s", with(func(e *journal.Entry) { e.Payload = []byte(`{"unterminated":`) })},
		{"invalid activity+json payload", "s", with(func(e *journal.Entry) {
			e.ContentType, e.Payload = "application/activity+json", []byte("<xml/>")
		})},
		{"payload over the limit", "s", with(func(e *journal.Entry) {
			e.ContentType, e.Payload = "application/octet-stream", make([]byte, journal.DefaultMaxPayload+1)
		})},
		{"duplicate ids in a batch", "s", []journal.Entry{entry("d"), entry("d")}},
	}
	for _, c := range cases {
		_, err := b.Append(t.Context(), c.stream, c.entries...)
		require.ErrorIs(t, err, journal.ErrInvalid, c.name)
		var ie *journal.InvalidError
		require.True(t, errors.As(err, &ie), "%s: an *journal.InvalidError naming the field", c.name)
		require.NotEmpty(t, ie.Field, c.name)
	}
	for _, id := range []string{"ok", "d"} {
		require.ErrorIs(t, errOf(b.Lookup(t.Context(), id)), journal.ErrNotFound, "nothing was written")
	}
	require.Zero(t, head(t, b, "s"), "nothing was written")
	for name, err := range map[string]error{
		"seq 0 does not exist": errOf(b.Read(t.Context(), "s", 0, 10, 0)),
		"limit 0":              errOf(b.Read(t.Context(), "s", 1, 0, 0)),
		"bad stream":           errOf(b.Read(t.Context(), "bad stream", 1, 1, 0)),
		"max bytes -1":         errOf(b.Read(t.Context(), "s", 1, 1, -1)),
		"empty head stream":    errOf(b.Head(t.Context(), "")),
		"empty id":             errOf(b.Lookup(t.Context(), "")),
	} {
		require.ErrorIs(t, err, journal.ErrInvalid, name)
	}
}

func testConcurrentAppendsAreGapless(t *testing.T, b Backend) {
	const writers, each = 8, 25
	race(t, writers, func(w int) error {
		for i := range each {
			if _, err := b.Append(t.Context(), "hot", entry(fmt.Sprintf("hot-%d-%d", w, i))); err != nil {
				return err
			}
			if _, err := b.Append(t.Context(), fmt.Sprintf("cold/%d", i%5), entry(fmt.Sprintf("cold-%d-%d", w, i))); err != nil {
				return err
			}
		}
		return nil
	})
	want := map[string]int{"hot": writers * each}
	for i := range 5 {
		want[fmt.Sprintf("cold/%d", i)] = writers * each / 5
	}
	for stream, n := range want {
		recs := readAll(t, b, stream)
		require.Len(t, recs, n, "every append of %s is stored once", stream)
		seen := map[string]bool{}
		for i, r := range recs {
			require.Equal(t, uint64(i+1), r.Seq, "seqs of %s are gapless", stream)
			require.False(t, seen[r.ID], "record %s stored twice", r.ID)
			seen[r.ID] = true
		}
	}
}

func testTraceContextStoredWithTheRecord(t *testing.T, b Backend) {
	const (
		tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		ts = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
	)
	e := entry("traced")
	e.Traceparent, e.Tracestate = tp, ts
	require.NoError(t, errOf(b.Append(t.Context(), "s", entry("plain"), e)))
	recs := readAll(t, b, "s")
	require.Len(t, recs, 2)
	require.Empty(t, recs[0].Traceparent)
	require.Equal(t, tp, recs[1].Traceparent)
	require.Equal(t, ts, recs[1].Tracestate)
	got, err := b.Lookup(t.Context(), "traced")
	require.NoError(t, err)
	require.Equal(t, tp, got.Traceparent)

	again := entry("traced")
	again.Traceparent = "00-11111111111111111111111111111111-2222222222222222-00"
	repeat, err := b.Append(t.Context(), "s", again)
	require.NoError(t, err, "the trace context is not the record's content: a retried append from another trace is the same record")
	require.Len(t, repeat, 1)
	require.Equal(t, uint64(2), repeat[0].Seq)
	require.Equal(t, tp, repeat[0].Traceparent, "a repeat returns the record as stored, with the trace context of its first append")
	require.Equal(t, ts, repeat[0].Tracestate)
	require.Equal(t, uint64(2), head(t, b, "s"))

	bad := entry("bad")
	bad.Traceparent = "00-00000000000000000000000000000000-00f067aa0ba902b7-01"
	require.ErrorIs(t, errOf(b.Append(t.Context(), "s", bad)), journal.ErrInvalid)
	require.ErrorIs(t, errOf(b.Lookup(t.Context(), "bad")), journal.ErrNotFound, "nothing was written")
}

// A JSON null is a JSON value, so a JSON type's payload: stored as its 4
// bytes, appended again idempotently. No bytes at all is what a JSON type
// refuses.
func testJSONNullIsAPayloadNotAnAbsence(t *testing.T, b Backend) {
	null := journal.Entry{ID: "null-1", Kind: "k", Payload: []byte("null")}
	recs, err := b.Append(t.Context(), "nulls", null)
	require.NoError(t, err)
	again, err := b.Append(t.Context(), "nulls", null)
	require.NoError(t, err, "the same null again is not a conflict")
	require.Equal(t, recs[0].Seq, again[0].Seq)
	got, err := b.Lookup(t.Context(), "null-1")
	require.NoError(t, err)
	require.Equal(t, "null", string(got.Payload))
	require.Equal(t, journal.DefaultContentType, got.ContentType)

	_, err = b.Append(t.Context(), "nulls", journal.Entry{ID: "none", Kind: "k"})
	var inv *journal.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, "entries[0].payload", inv.Field)
	require.Equal(t, uint64(1), head(t, b, "nulls"), "the refusal wrote nothing")
}
