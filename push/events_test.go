package push_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// An operator's subscription to herald/events, served by the same worker as
// any other registration: a receiver that answers 410 parks its
// registration, and the parked event reaches the operator's receiver on
// loopback through the real transport.
func TestParkedEventReachesASubscriber(t *testing.T) {
	got := make(chan []byte, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/gone" {
			http.Error(w, "this inbox was deleted", http.StatusGone)
			return
		}
		got <- body
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true})
	require.NoError(t, err)
	f := newFixture(t)
	f.append("s", 1)
	for _, r := range []push.Registration{
		{Stream: "s", ID: "gone", Namespace: ns, URL: srv.URL + "/gone"},
		{Stream: push.EventsStream, ID: "ops", Namespace: ns, URL: srv.URL + "/ops"},
	} {
		_, err := f.store.Register(t.Context(), r)
		require.NoError(t, err)
	}
	w, err := push.NewWorker(f.store, f.store, tr, f.proj, push.WithOwner("w1"))
	require.NoError(t, err)

	rep, err := w.RunOnce(t.Context(), at(0), 10)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Parked)
	rep, err = w.RunOnce(t.Context(), at(1), 10)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deliveries, "the event is one more record of herald/events")

	body := <-got
	var ev push.OperationalEvent
	require.NoError(t, json.Unmarshal(body, &ev))
	require.Equal(t, push.OperationalEvent{Kind: push.KindParked, Stream: "s", Registration: "gone", Namespace: ns, Host: push.HostOf(srv.URL),
		Cursor: 1, Reason: ev.Reason, At: at(0)}, ev)
	require.Contains(t, ev.Reason, "410")
	require.Equal(t, uint64(2), f.get(push.EventsStream, "ops").NextSeq)
}

// RegistrationEvent and HostEvent derive the record id from the change: the
// same change gives the same record (an idempotent append), another change
// another one.
func TestOperationalEventIDs(t *testing.T) {
	r := push.Registration{Stream: "s", ID: "r", Namespace: ns, URL: "https://a.example/in"}
	a, ok := push.RegistrationEvent(push.KindParked, r, 3, "", "410 Gone", at(0))
	require.True(t, ok)
	b, _ := push.RegistrationEvent(push.KindParked, r, 3, "", "410 Gone", at(0))
	require.Equal(t, a, b)
	for _, other := range []journal.Entry{
		must(push.RegistrationEvent(push.KindUnparked, r, 3, "", "410 Gone", at(0))),
		must(push.RegistrationEvent(push.KindParked, r, 4, "", "410 Gone", at(0))),
		must(push.RegistrationEvent(push.KindParked, r, 3, "", "410 Gone", at(1))),
		must(push.RegistrationEvent(push.KindParked, r, 3, "", "404", at(0))),
	} {
		require.NotEqual(t, a.ID, other.ID)
	}
	require.NoError(t, journal.ValidateID("record id", a.ID))
	_, ok = push.RegistrationEvent(push.KindParked, push.Registration{Stream: push.EventsStream, ID: "ops"}, 1, "", "", at(0))
	require.False(t, ok, "no events about registrations of herald/events")

	up := push.Host{Host: "a.example:443", State: push.HostUp, Since: at(0)}
	down := up
	for range push.HostDownAfter {
		down = down.Failed(push.Evidence{At: at(1), Error: "x"}, push.MinHostHorizon)
	}
	e, ok := push.HostEvent(up, down)
	require.True(t, ok)
	require.Equal(t, push.KindHostDown, e.Kind)
	_, ok = push.HostEvent(down, down)
	require.False(t, ok, "no change, no event")
}

func must(e journal.Entry, ok bool) journal.Entry {
	if !ok {
		panic("no event")
	}
	return e
}
