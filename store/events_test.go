package store_test

import (
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/stretchr/testify/require"
)

// RegistrationEvent and HostEvent derive the record id from the change: the
// same change gives the same record (an idempotent append), another change
// another one.
func TestOperationalEventIDs(t *testing.T) {
	r := store.Registration{Stream: "s", ID: "r", Namespace: ns, URL: "https://a.example/in"}
	a, ok := store.RegistrationEvent(store.KindParked, r, 3, "", "410 Gone", at(0))
	require.True(t, ok)
	b, _ := store.RegistrationEvent(store.KindParked, r, 3, "", "410 Gone", at(0))
	require.Equal(t, a, b)
	for _, other := range []journal.Entry{
		must(store.RegistrationEvent(store.KindUnparked, r, 3, "", "410 Gone", at(0))),
		must(store.RegistrationEvent(store.KindParked, r, 4, "", "410 Gone", at(0))),
		must(store.RegistrationEvent(store.KindParked, r, 3, "", "410 Gone", at(1))),
		must(store.RegistrationEvent(store.KindParked, r, 3, "", "404", at(0))),
	} {
		require.NotEqual(t, a.ID, other.ID)
	}
	require.NoError(t, journal.ValidateID("record id", a.ID))
	_, ok = store.RegistrationEvent(store.KindParked, store.Registration{Stream: store.EventsStream, ID: "ops"}, 1, "", "", at(0))
	require.False(t, ok, "no events about registrations of herald/events")

	up := store.Host{Host: "a.example:443", State: store.HostUp, Since: at(0)}
	down := up
	for range store.HostDownAfter {
		down = down.Failed(store.Evidence{At: at(1), Error: "x"}, store.MinHostHorizon)
	}
	e, ok := store.HostEvent(up, down)
	require.True(t, ok)
	require.Equal(t, store.KindHostDown, e.Kind)
	_, ok = store.HostEvent(down, down)
	require.False(t, ok, "no change, no event")
}

func must(e journal.Entry, ok bool) journal.Entry {
	if !ok {
		panic("no event")
	}
	return e
}
