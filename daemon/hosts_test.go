package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/sqlite"
)

// hostile is a receiver's text as a host-level failure may carry it: an
// escape sequence and a line break, which a terminal must not see raw.
const hostile = "timeout: \x1b[2J\x1b[31mowned\nsecond line"

// downHostDB returns a SQLite database in which down.example:443 is down
// (three host-level failures at t0) with two registrations held, and
// up.example:443 has a registration of its own.
func downHostDB(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "herald.db")
	ctx := t.Context()
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Append(ctx, "orders", journal.Entry{ID: "o-1", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	for _, r := range []struct{ id, url string }{{"a", "https://down.example/a"}, {"b", "https://down.example/b"}, {"c", "https://up.example/c"}} {
		_, err := s.Register(ctx, push.Registration{Stream: "orders", ID: r.id, Namespace: "webhook", URL: r.url})
		require.NoError(t, err)
	}
	for i := range 3 {
		when := t0.Add(time.Duration(i) * time.Minute)
		batch, err := s.Due(ctx, push.DueQuery{At: when, Limit: 10, Namespace: "webhook", Owner: "w", LeaseUntil: when.Add(time.Second)})
		require.NoError(t, err)
		for _, st := range batch.Registrations {
			if st.Host() != "down.example:443" {
				continue
			}
			_, err := s.HostFailed(ctx, push.HostFailure{Claim: st.Claim(), NextSeq: 1, Host: st.Host(),
				Evidence: push.Evidence{At: when, Error: hostile}, Policy: push.DefaultHostPolicy()})
			require.NoError(t, err)
			break
		}
	}
	return path
}

func TestAdminAPIHosts(t *testing.T) {
	db := downHostDB(t)
	s, err := sqlite.Open(t.Context(), db)
	require.NoError(t, err)
	defer s.Close()
	srv := httptest.NewServer(AdminHandler(s, "t0ken", func() time.Time { return t0.Add(time.Hour) }))
	defer srv.Close()

	code, body := adminCall(t, srv, "GET", "/v1/hosts", "", nil)
	require.Equal(t, http.StatusUnauthorized, code)
	code, body = adminCall(t, srv, "GET", "/v1/hosts", "t0ken", url.Values{"state": {"down"}})
	require.Equal(t, http.StatusOK, code, body)
	var hosts []push.Host
	require.NoError(t, json.Unmarshal([]byte(body), &hosts))
	require.Len(t, hosts, 1)
	require.Equal(t, 2, hosts[0].Held)
	code, body = adminCall(t, srv, "GET", "/v1/registrations", "t0ken", url.Values{"stream": {"orders"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 2, strings.Count(body, `"held_for": "down"`), body)
	code, body = adminCall(t, srv, "GET", "/v1/hosts", "t0ken", url.Values{"state": {"sideways"}})
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = adminCall(t, srv, "POST", "/v1/hosts/reset", "t0ken", nil)
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = adminCall(t, srv, "POST", "/v1/hosts/reset", "t0ken", url.Values{"host": {"nowhere.example:443"}})
	require.Equal(t, http.StatusNotFound, code, body)
	code, body = adminCall(t, srv, "POST", "/v1/hosts/reset", "t0ken", url.Values{"host": {"down.example:443"}})
	require.Equal(t, http.StatusOK, code, body)
	var h push.Host
	require.NoError(t, json.Unmarshal([]byte(body), &h))
	require.Equal(t, push.HostUp, h.State)
	require.True(t, h.Since.Equal(t0.Add(time.Hour)), "reset at the admin's clock")
}

func TestHostMetrics(t *testing.T) {
	db := downHostDB(t)
	s, err := sqlite.Open(t.Context(), db)
	require.NoError(t, err)
	defer s.Close()
	m := newMetrics(func(ctx context.Context) (push.Stats, error) { return s.Stats(ctx, t0) },
		func(ctx context.Context) ([]push.Host, error) { return AllHosts(ctx, s, push.HostQuery{}) })
	m.hooks("webhook").HostFailure(push.Host{Host: "down.example:443", State: push.HostDown})
	srv := httptest.NewServer(m.handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, want := range []string{
		`herald_hosts{state="down"} 1`,
		`herald_hosts{state="unavailable"} 0`,
		`herald_held_registrations 2`,
		`herald_host_failures_total{host="down.example:443"} 1`,
	} {
		require.Contains(t, string(body), want)
	}
}
