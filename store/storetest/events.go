package storetest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// herald's operational events (store.EventsStream); the Cursor and Hosts
// groups check the others beside the change they tell.
var eventTests = []test{
	testParkedInTheChangesStep, testSkippedByOperatorAndByPolicy, testNoEventsAboutRegistrationsOfHeraldEvents,
	testUsersCannotAppendToHeraldStreams,
}

// sequencer numbers records after commit (store/postgres); a step makes the
// events a change appended readable at once.
type sequencer interface {
	Sequence(ctx context.Context) (int, error)
}

// heraldEvents returns every retained record of store.EventsStream.
func heraldEvents(t *testing.T, b Backend) []journal.Record {
	t.Helper()
	if s, ok := b.(sequencer); ok {
		_, err := s.Sequence(t.Context())
		require.NoError(t, err)
	}
	recs, err := b.Read(t.Context(), store.EventsStream, 1, 10000, 0)
	require.NoError(t, err)
	return recs
}

// heraldEventTotals counts the retained events and their payload bytes, for
// the retention tests, which prune them with the rest.
func heraldEventTotals(t *testing.T, b Backend) (records int, bytes int64) {
	t.Helper()
	for _, r := range heraldEvents(t, b) {
		records++
		bytes += int64(len(r.Payload))
	}
	return records, bytes
}

// payload decodes an event's payload, checking the record around it.
func payload(t *testing.T, r journal.Record) store.OperationalEvent {
	t.Helper()
	require.Equal(t, store.EventsStream, r.Stream)
	require.Equal(t, journal.DefaultContentType, r.ContentType)
	require.True(t, json.Valid(r.Payload), "payload %q", r.Payload)
	var ev store.OperationalEvent
	require.NoError(t, json.Unmarshal(r.Payload, &ev))
	require.Equal(t, r.Kind, ev.Kind, "the payload's kind is the record's")
	return ev
}

func eventKinds(recs []journal.Record) []string {
	return mapped(recs, func(r journal.Record) string { return r.Kind })
}

func testParkedInTheChangesStep(t *testing.T, b Backend) {
	streamWithReg(t, b, 3, regAt("s", "r", "webhook", "https://a.example/inbox/r"))
	require.Empty(t, heraldEvents(t, b), "registering tells nothing")
	require.NoError(t, b.Advance(t.Context(), claim(t, b, "s", "r", at(0)), 2))
	hostile := "410 Gone: <script>alert(1)</script>\"},{\"kind\":\"forged\x00\xff"
	require.NoError(t, b.Park(t.Context(), claim(t, b, "s", "r", at(10)), 3, store.Evidence{At: at(10), Event: store.EventParked, Error: hostile}))

	recs := heraldEvents(t, b)
	require.Equal(t, []string{store.KindParked}, eventKinds(recs))
	reason := store.Evidence{Error: hostile}.Clean().Error
	require.Equal(t, store.OperationalEvent{Kind: store.KindParked, Stream: "s", Registration: "r", Namespace: "webhook",
		Host: "a.example:443", Cursor: 3, Reason: reason, At: at(10)}, payload(t, recs[0]),
		"the cursor as the park left it, at the sweep's instant, the reason cleaned as evidence is")
	require.Contains(t, reason, "<script>alert(1)</script>\"},{\"kind\":\"forged", "hostile text stays data")
	require.NotContains(t, reason, "\x00")
	require.Contains(t, recs[0].ID, "herald-event:")
	var fields map[string]any
	require.NoError(t, json.Unmarshal(recs[0].Payload, &fields))
	require.Equal(t, store.KindParked, fields["kind"], "the payload names its kind; the reason cannot forge it")
	require.Equal(t, "2026-03-15T11:00:10Z", fields["at"], "RFC 3339, UTC")
}

func testSkippedByOperatorAndByPolicy(t *testing.T, b Backend) {
	streamWithReg(t, b, 5)
	require.ErrorIs(t, b.Skip(t.Context(), "s", "r", 9, at(1), "too far"), journal.ErrInvalid)
	require.Empty(t, heraldEvents(t, b), "a refused skip tells nothing")
	require.NoError(t, b.Skip(t.Context(), "s", "r", 3, at(2), "record 2 is malformed"))
	require.NoError(t, b.AddEvidence(t.Context(), store.Evidence{Stream: "s", Registration: "r", At: at(3), Event: store.EventFailed, Error: "503"}))
	require.NoError(t, b.AddEvidence(t.Context(), store.Evidence{Stream: "s", Registration: "r", At: at(4), Event: store.EventSkipped,
		Seq: 4, MessageID: "m4", Error: "422 Unprocessable"}))
	require.ErrorIs(t, b.AddEvidence(t.Context(), store.Evidence{Stream: "s", Registration: "gone", At: at(5), Event: store.EventSkipped, Seq: 4}), journal.ErrNotFound)

	recs := heraldEvents(t, b)
	require.Equal(t, []string{store.KindSkipped, store.KindSkipped}, eventKinds(recs))
	require.Equal(t, store.OperationalEvent{Kind: store.KindSkipped, Stream: "s", Registration: "r", Namespace: "webhook",
		Host: "receiver.example:443", By: store.ByOperator, Cursor: 3, Reason: "record 2 is malformed", At: at(2)}, payload(t, recs[0]), "the cursor the skip set")
	require.Equal(t, store.OperationalEvent{Kind: store.KindSkipped, Stream: "s", Registration: "r", Namespace: "webhook",
		Host: "receiver.example:443", By: store.ByPolicy, Cursor: 4, Reason: "422 Unprocessable", At: at(4)}, payload(t, recs[1]), "the record whose message was passed")
}

func testNoEventsAboutRegistrationsOfHeraldEvents(t *testing.T, b Backend) {
	streamWithReg(t, b, 1)
	require.NoError(t, b.Park(t.Context(), claim(t, b, "s", "r", at(0)), 1, store.Evidence{At: at(0), Error: "410 Gone"}))
	require.Len(t, heraldEvents(t, b), 1)

	// An operator's subscription to herald's events, whose receiver is gone.
	register(t, b, regAt(store.EventsStream, "ops", "webhook", "https://chat.example/hook"))
	require.NoError(t, b.Park(t.Context(), claim(t, b, store.EventsStream, "ops", at(10)), 1, store.Evidence{At: at(10), Error: "410 Gone"}))
	require.NoError(t, b.Unpark(t.Context(), store.EventsStream, "ops", at(20)))
	require.NoError(t, b.Skip(t.Context(), store.EventsStream, "ops", 2, at(30), "past it"))
	require.Len(t, heraldEvents(t, b), 1, "changes to a registration of herald/events feed it nothing")
	st := get(t, b, store.EventsStream, "ops")
	require.Equal(t, uint64(2), st.NextSeq, "it is an ordinary registration otherwise")
	require.Zero(t, st.Lag())
}

func testUsersCannotAppendToHeraldStreams(t *testing.T, b Backend) {
	for _, stream := range []string{store.EventsStream, "herald/other"} {
		_, err := b.Append(t.Context(), stream, journal.Entry{ID: "forged-" + stream, Kind: store.KindParked, Payload: []byte(`{}`)})
		require.ErrorIs(t, err, journal.ErrInvalid, stream)
		var inv *journal.InvalidError
		require.ErrorAs(t, err, &inv)
		require.Equal(t, "stream", inv.Field)
		require.Contains(t, err.Error(), "reserved")
	}
	require.Empty(t, heraldEvents(t, b), "nothing was written")
	require.ErrorIs(t, errOf(b.Lookup(t.Context(), "forged-"+store.EventsStream)), journal.ErrNotFound)
	require.ErrorIs(t, errOf(b.Append(t.Context(), "s", journal.Entry{ID: journal.ReservedIDPrefix + "0123", Kind: "k", Payload: []byte(`{}`)})),
		journal.ErrInvalid, "an event's id cannot be taken in another stream either")
	require.NoError(t, errOf(b.Append(t.Context(), "heraldry/x", entry("fine"))), "only the prefix herald/ is reserved")
}
