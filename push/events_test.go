package push_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// An operator's subscription to herald/events, served by the same worker as
// any other registration: a receiver that answers 410 parks its
// registration, and the parked event reaches the operator's receiver on
// loopback through the real transport.
func TestParkedEventReachesASubscriber(t *testing.T) {
	got := make(chan []byte, 4)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/gone" {
			http.Error(w, "this inbox was deleted", http.StatusGone)
			return
		}
		got <- body
		w.WriteHeader(http.StatusNoContent)
	})

	tr := loopback(t, 0)
	f := newFixture(t)
	f.append("s", 1)
	for _, r := range []push.Registration{
		{Stream: "s", ID: "gone", Namespace: ns, URL: srv.URL + "/gone"},
		{Stream: store.EventsStream, ID: "ops", Namespace: ns, URL: srv.URL + "/ops"},
	} {
		_, err := f.store.Register(t.Context(), r)
		require.NoError(t, err)
	}
	w := f.workerOn(tr)

	rep, err := w.RunOnce(t.Context(), at(0), 10)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Parked)
	rep, err = w.RunOnce(t.Context(), at(1), 10)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deliveries, "the event is one more record of herald/events")

	body := <-got
	var ev store.OperationalEvent
	require.NoError(t, json.Unmarshal(body, &ev))
	require.Equal(t, store.OperationalEvent{Kind: store.KindParked, Stream: "s", Registration: "gone", Namespace: ns, Host: store.HostOf(srv.URL),
		Cursor: 1, Reason: ev.Reason, At: at(0)}, ev)
	require.Contains(t, ev.Reason, "410")
	require.Equal(t, uint64(2), f.get(store.EventsStream, "ops").NextSeq)
}
