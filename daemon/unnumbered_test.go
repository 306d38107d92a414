//go:build openapi

package daemon

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// The HTTP API counts and shows records an application committed that no
// sequencer numbered yet (this daemon is not running): GET /v1/status
// counts them, GET /v1/records/status shows one waiting with the
// registrations that will get it, and both answers are the document's.
func TestAPIShowsRecordsWaitingToBeNumbered(t *testing.T) {
	ctx := t.Context()
	s := pgtest.Backlog(t)
	srv := apiServer(t, s, testToken)
	v := docValidator(t)
	get := func(path string) string {
		req := request(t, srv, http.MethodGet, path, "", testToken, "")
		resp, body := send(t, srv, req)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		requireDescribed(t, v, req, "", resp, body)
		return body
	}

	var st apiStatus
	require.NoError(t, json.Unmarshal([]byte(get("/v1/status")), &st))
	require.Equal(t, uint64(2), st.Unnumbered.Records)
	require.Equal(t, 1, st.Unnumbered.Streams)
	require.False(t, st.Unnumbered.Oldest.IsZero())
	require.Zero(t, st.Namespaces["webhook"].Behind, "no cursor is behind a record without a seq")

	var rs operator.RecordStatus
	require.NoError(t, json.Unmarshal([]byte(get("/v1/records/status?id=evt-2")), &rs))
	require.True(t, rs.Unnumbered)
	require.Zero(t, rs.Record.Seq)
	require.Equal(t, "orders/1", rs.Record.Stream)
	require.Empty(t, rs.Acknowledged)
	require.Len(t, rs.NotAcknowledged, 1)

	_, err := s.Sequence(ctx)
	require.NoError(t, err)
	st = apiStatus{}
	require.NoError(t, json.Unmarshal([]byte(get("/v1/status")), &st))
	require.Equal(t, store.Unnumbered{}, st.Unnumbered)
	require.Equal(t, uint64(2), st.Namespaces["webhook"].Behind)
	rs = operator.RecordStatus{}
	require.NoError(t, json.Unmarshal([]byte(get("/v1/records/status?id=evt-2")), &rs))
	require.False(t, rs.Unnumbered)
	require.Equal(t, uint64(2), rs.Record.Seq)
}

// Appending again, with the same content, a record that waits to be
// numbered writes nothing: 200, not 201, with the seq the append's
// sequencer step gave it.
func TestAPIAppendOfAWaitingRecordIsNotNew(t *testing.T) {
	s := pgtest.NewStore(t)
	pgtest.AppendUnnumbered(t, s, "orders/1", journal.Entry{ID: "evt-1", Kind: "order.created", Payload: []byte(`{"total":42}`)})
	srv := apiServer(t, s, testToken)
	code, body := call(t, srv, http.MethodPost, "/v1/records", "application/json", testToken,
		`{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "order.created", "payload": {"total":42}}]}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"seq": 1`)
}
