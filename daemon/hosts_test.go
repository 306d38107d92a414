package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/hostseed"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/sqlite"
)

// hostile is a receiver's text as a host-level failure may carry it.
const hostile = hostseed.Hostile

// downHostDB: down.example:443 down with two registrations held (hostseed).
func downHostDB(t *testing.T) string { return hostseed.DownHostDB(t, t0) }

func TestAdminAPIHosts(t *testing.T) {
	db := downHostDB(t)
	s, err := sqlite.Open(t.Context(), db)
	require.NoError(t, err)
	defer s.Close()
	srv := httptest.NewServer(adminHandler(s, "t0ken", func() time.Time { return t0.Add(time.Hour) }, nil))
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
		func(ctx context.Context) ([]push.Host, error) { return push.AllHosts(ctx, s, push.HostQuery{}) })
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
