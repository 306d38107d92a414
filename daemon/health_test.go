package daemon

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store/postgres"
)

// /healthz says ok or not ok and nothing else to a request without the
// admin token: a PostgreSQL store whose database is gone makes it 503 "not
// ok", without the database's name, user or address, which pgx's error
// holds; with the admin token the answer tells why.
func TestHealthzTellsNothingWithoutAToken(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	_, err := postgres.MigrateUp(t.Context(), dbURL)
	require.NoError(t, err)
	s, err := postgres.Open(t.Context(), dbURL, postgres.WithKeyring(seal.Generate()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	d := start(t, Options{Store: s, Transport: noTransport, Projections: []push.Projection{webhook.New()},
		MetricsAddr: "127.0.0.1:0", AdminToken: testToken})
	health := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+d.Addrs.Metrics+"/healthz", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, b := sendWith(t, http.DefaultClient, req)
		return resp.StatusCode, b
	}
	code, body := health("")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)

	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	name := strings.TrimPrefix(u.Path, "/")
	admin := *u
	admin.Path = "/postgres"
	conn, err := pgx.Connect(t.Context(), admin.String())
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	require.NoError(t, err)
	require.NoError(t, conn.Close(context.Background()))

	for _, token := range []string{"", "wrong", testToken[:31]} {
		code, body = health(token)
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "not ok\n", body, "token %q", token)
	}
	code, body = health(testToken)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, name, "with the admin token, why")
	for _, secret := range []string{name, u.User.Username(), u.Port()} {
		_, body = health("")
		require.NotContains(t, body, secret)
	}
}
