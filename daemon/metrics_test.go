package daemon

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// Off loopback, /metrics, which names receivers' hosts and counts every
// tenant's registrations, is served over TLS only to a token that may read
// every stream; /healthz stays open. The daemon is told the address is
// 0.0.0.0:9090 and handed a listener on 127.0.0.1, as herald run hands it
// the socket it opened.
func TestMetricsOffLoopbackTellNothingWithoutAReaderToken(t *testing.T) {
	s := downHostStore(t)
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	apiToken := "5a1e0c9d7f3b2846e1d0c9b8a7f6e5d4"
	d := start(t, Options{Store: s, Transport: noTransport, Projections: []push.Projection{webhook.New()},
		MetricsAddr: "0.0.0.0:9090", Listeners: Listeners{Metrics: ln}, AdminToken: testToken, APIToken: apiToken,
		TLSCertFile: certFile, TLSKeyFile: keyFile})
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(path, token string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+d.Addrs.Metrics+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, body := sendWith(t, c, req)
		return resp.StatusCode, body
	}
	const told = `herald_host_failures{host="down.example:443"}`

	for name, token := range map[string]string{"no token": "", "a wrong token": "hrt_" + strings.Repeat("0", 64)} {
		code, body := get("/metrics", token)
		require.Equal(t, http.StatusUnauthorized, code, name)
		require.NotContains(t, body, "herald_", name)
		require.NotContains(t, body, "down.example", name)
	}
	for name, token := range map[string]string{"a reader token": tokenIn(t, s, store.RoleReader),
		"HERALD_ADMIN_TOKEN": testToken, "HERALD_API_TOKEN": apiToken} {
		code, body := get("/metrics", token)
		require.Equal(t, http.StatusOK, code, name)
		require.Contains(t, body, told, name)
		require.Contains(t, body, `herald_registrations{namespace="webhook",state="`, name)
	}
	for name, token := range map[string]string{"a scoped reader token": tokenIn(t, s, store.RoleReader, "orders"),
		"a scoped operator token": tokenIn(t, s, store.RoleOperator, "orders"), "a producer token": tokenIn(t, s, store.RoleProducer)} {
		code, body := get("/metrics", token)
		require.Equal(t, http.StatusForbidden, code, name)
		require.NotContains(t, body, "herald_", name)
	}
	code, body := get("/healthz", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)

	resp, err := http.Get("http://" + d.Addrs.Metrics + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP is not served off loopback")
}

// On loopback /metrics stays as it was: plain HTTP, open to a scraper
// without a token, even with TLS and tokens set for the other addresses;
// but only to a loopback Host, as an open API: a name an attacker's DNS
// rebinds to 127.0.0.1 lets a page the operator visits read nothing of it.
func TestMetricsOnLoopbackStayOpenToLoopbackHostsOnly(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t, t.TempDir())
	d := start(t, Options{Store: downHostStore(t), Transport: noTransport, Projections: []push.Projection{webhook.New()},
		MetricsAddr: "127.0.0.1:0", AdminToken: testToken, TLSCertFile: certFile, TLSKeyFile: keyFile})
	get := func(host string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, "http://"+d.Addrs.Metrics+"/metrics", nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := get(d.Addrs.Metrics)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `herald_host_failures{host="down.example:443"}`)
	code, body = get("rebound.example:9090")
	require.Equal(t, http.StatusForbidden, code)
	require.NotContains(t, body, "herald_")
	require.NotContains(t, body, "down.example")
}
