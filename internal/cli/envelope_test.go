package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// register --envelope belongs to the webhook namespace: given to another,
// or with a value that is not a boolean, it is a usage error naming the
// flag, and nothing is written.
func TestRegisterEnvelopeIsRefusedOutsideTheWebhookNamespace(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--namespace", "cloudevents", "--source", "/orders", "--envelope"}, "--envelope does not apply to the cloudevents namespace"},
		{[]string{"--namespace", "a2a", "--envelope"}, "--envelope does not apply to the a2a namespace"},
		{[]string{"--namespace", "webhook", "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--envelope=maybe"}, "--envelope"},
	} {
		args := append([]string{"register", "--stream", "s", "--id", "r", "--url", "https://hooks.example/x"}, c.args...)
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		_, err := os.Stat(db)
		require.ErrorIs(t, err, os.ErrNotExist, "%v: a refused register opened nothing", c.args)
	}
}

// register --envelope reaches the wire: a sweep sends the record to a
// loopback receiver as {"type", "timestamp", "data"}, with its kind, stream
// and seq in the headers; registered again without the flag, the payload
// alone.
func TestRegisterEnvelopeReachesTheWire(t *testing.T) {
	type got struct {
		header http.Header
		body   []byte
	}
	received := make(chan got, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- got{r.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	db := filepath.Join(t.TempDir(), "herald.db")
	register := func(extra ...string) {
		heraldOK(t, db, "", append([]string{"register", "--stream", "orders/1001", "--id", "billing", "--namespace", "webhook",
			"--url", srv.URL, "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, extra...)...)
	}
	sweep := func(at string) got {
		heraldOK(t, db, "", "sweep", "--namespace", "webhook", "--at", at, "--allow-http", "--allow-private-network")
		require.Len(t, received, 1)
		return <-received
	}

	register("--envelope")
	heraldOK(t, db, `{"total":42}`, "append", "--stream", "orders/1001", "--id", "evt-1", "--kind", "order.created")
	g := sweep("2026-03-15T11:00:00Z")
	var env struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(g.body, &env), "%s", g.body)
	require.Equal(t, "order.created", env.Type)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, env.Timestamp)
	require.JSONEq(t, `{"total":42}`, string(env.Data))
	require.Equal(t, "order.created", g.header.Get("Herald-Kind"))
	require.Equal(t, "orders/1001", g.header.Get("Herald-Stream"))
	require.Equal(t, "1", g.header.Get("Herald-Seq"))

	register() // without --envelope: the payload alone
	heraldOK(t, db, `{"total":43}`, "append", "--stream", "orders/1001", "--id", "evt-2", "--kind", "order.paid")
	g = sweep("2026-03-15T11:01:00Z")
	require.JSONEq(t, `{"total":43}`, string(g.body))
	require.Equal(t, "order.paid", g.header.Get("Herald-Kind"))
	require.Equal(t, "2", g.header.Get("Herald-Seq"))
}
