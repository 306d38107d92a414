package push_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// The producer's trace reaches the receiver: each delivery carries a child
// of the appended traceparent (same trace id, a new span id, the sampled
// flag kept) and the tracestate as given; a record without one sends none.
func TestTraceparentReachesTheReceiver(t *testing.T) {
	type seen struct{ parent, state string }
	got := make(chan seen, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("traceparent"), r.Header.Get("tracestate")}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true})
	require.NoError(t, err)
	f := newFixture(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	_, err = f.store.Append(t.Context(), "s",
		journal.Entry{ID: "a", Kind: "k", Payload: []byte(`{}`), Traceparent: tp, Tracestate: "rojo=00f067aa0ba902b7"},
		journal.Entry{ID: "b", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = f.store.Register(t.Context(), push.Registration{Stream: "s", ID: "r", Namespace: ns, URL: srv.URL + "/in"})
	require.NoError(t, err)
	w, err := push.NewWorker(f.store, f.store, tr, f.proj, push.WithOwner("w1"))
	require.NoError(t, err)
	rep, err := w.RunOnce(t.Context(), at(0), 10)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Deliveries)

	first := <-got
	require.NoError(t, journal.ValidateTraceparent("received", first.parent))
	require.Equal(t, tp[:36], first.parent[:36], "the appended trace id")
	require.NotEqual(t, tp[36:52], first.parent[36:52], "a new span id")
	require.Equal(t, "01", first.parent[53:], "the sampled flag kept")
	require.Equal(t, "rojo=00f067aa0ba902b7", first.state)
	require.Equal(t, seen{}, <-got, "no trace context, no header")
}
