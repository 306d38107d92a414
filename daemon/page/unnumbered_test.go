package page_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
)

// The overview counts the records committed but not yet numbered, and asks
// once they waited long; a record's view shows one waiting, with the
// registration that will get it, where it answered 404.
func TestThePageShowsRecordsWaitingToBeNumbered(t *testing.T) {
	ctx := t.Context()
	s := pgtest.Backlog(t)
	// The page's clock a minute after the append: the records waited long.
	_, srv := serve(t, s, testToken, time.Now().Add(time.Minute))
	c := client(t)
	login(t, c, srv)

	resp, body := get(t, c, srv.URL+"/ui/")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Regexp(t, `<p class="error" id="unnumbered">Not yet in records behind: 2 records waiting to be numbered, the oldest appended [^<]*; no sequencer numbers them`, body)
	require.Contains(t, body, `data-state="behind">0<`)

	resp, body = get(t, c, srv.URL+"/ui/record?id=evt-2")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `id="unnumbered">Committed but waiting to be numbered`)
	require.Contains(t, body, "Acknowledged by 0, not yet by 1.")
	require.Contains(t, body, "billing")

	_, err := s.Sequence(ctx)
	require.NoError(t, err)
	_, body = get(t, c, srv.URL+"/ui/")
	require.NotContains(t, body, `id="unnumbered"`)
	require.Contains(t, body, `data-state="behind">2<`)
	_, body = get(t, c, srv.URL+"/ui/record?id=evt-2")
	require.NotContains(t, body, `id="unnumbered"`)
	require.Contains(t, body, "#2</h2>")
}
