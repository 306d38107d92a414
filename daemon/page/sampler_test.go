package page_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/seedtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

var polylineRE = regexp.MustCompile(`<polyline points="([^"]*)"`)

// TestChartsComeFromSamplesOnTheDaemonsClock: the charts start empty; after
// samples at explicit instants around a sweep that delivered 4 records,
// deliveries/s and records behind show what happened.
func TestChartsComeFromSamplesOnTheDaemonsClock(t *testing.T) {
	s := seedtest.SQLite(t)
	rcv := newReceiver(t, http.StatusNoContent)
	for i := range 4 {
		_, err := s.Append(t.Context(), "orders/9", journal.Entry{ID: "o9-" + string(rune('a'+i)), Kind: "k", Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	_, err := s.Register(t.Context(), push.Registration{Stream: "orders/9", ID: "r", Namespace: "webhook", URL: rcv.srv.URL,
		Config: push.Config(`{"secrets":["` + seedSecretConfig + `"]}`)})
	require.NoError(t, err)
	p, srv := serve(t, s, "", seedT0)
	c := client(t)

	_, body := get(t, c, srv.URL+"/ui/")
	require.Contains(t, body, "no samples yet", "the charts start empty")

	w := loopbackWorker(t, s, push.WithHooks(p.Hooks("webhook", push.Hooks{})))
	require.NoError(t, p.Sample(t.Context(), seedT0))
	rep, err := w.RunOnce(t.Context(), seedT0.Add(30*time.Second), 10)
	require.NoError(t, err)
	require.Equal(t, 4, rep.Deliveries)
	require.NoError(t, p.Sample(t.Context(), seedT0.Add(time.Minute)))

	_, body = get(t, c, srv.URL+"/ui/")
	lines := polylineRE.FindAllStringSubmatch(body, -1)
	require.Len(t, lines, 2, "a deliveries/s and a records-behind line")
	require.Len(t, strings.Fields(lines[0][1]), 1, "one rate between two samples")
	require.Len(t, strings.Fields(lines[1][1]), 2, "two lag points")
	require.Contains(t, body, "deliveries/s: 0.07 at the last sample", "4 deliveries in 60 s")
	require.Contains(t, body, "records behind: 0 at the last sample")
	require.Contains(t, body, "max 4", "4 records were behind at the first sample")
}
