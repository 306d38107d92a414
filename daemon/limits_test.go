package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/logtest"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

// dialFrom dials addr from the loopback address src (127.0.0.0/8 is all
// loopback on Linux), so that one test plays several clients.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.DialContext(t.Context(), "tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clientFrom is an HTTP client whose connections come from src.
func clientFrom(src string, timeout time.Duration) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: d.DialContext}}
}

// idleAfterRefusal sends an unauthenticated request on c and reads the
// answer; it reports whether the server answered (401, or 429 once the
// address failed too often) rather than closing c.
func idleAfterRefusal(t *testing.T, c net.Conn, host string) bool {
	t.Helper()
	_, err := fmt.Fprintf(c, "GET /v1/registrations HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the server neither answered nor closed the connection")
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Contains(t, []int{http.StatusUnauthorized, http.StatusTooManyRequests}, resp.StatusCode)
	return true
}

// stillOpen reports whether the server has not closed c: a read finds
// nothing before a short deadline.
func stillOpen(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// closedByServer waits, up to within, for the server to close c.
func closedByServer(c net.Conn, within time.Duration) error {
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c) // nil at EOF; a reset is a close too
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("still open after %v", within)
	}
	return nil
}

// Hundreds of connections held idle after a 401 (or 429), and POSTs whose body never
// comes, do not keep the operator out: a request with the valid token from
// another address is answered while they are open, the server closes each
// within its limits (idle, and the body deadline), and one address cannot
// hold more than MaxConnsPerClient.
func TestServersHoldUnderIdleAndStalledConnections(t *testing.T) {
	limits := Limits{ReadHeader: 3 * time.Second, Read: 3 * time.Second, Write: 5 * time.Second, Idle: 3 * time.Second,
		MaxConns: 512, MaxConnsPerClient: 40}
	d := start(t, Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{webhook.New()},
		MetricsAddr: "", AdminAddr: "127.0.0.1:0", AdminToken: testToken, Limits: limits})
	addr := d.Addrs.Admin

	var held []net.Conn
	for i := range 10 { // ten attacking addresses, 15 idle and 15 stalled connections each
		src := fmt.Sprintf("127.0.0.%d", 10+i)
		for range 15 {
			c := dialFrom(t, src, addr)
			require.True(t, idleAfterRefusal(t, c, addr), "an idle connection from %s under its limit was closed at once", src)
			held = append(held, c)
		}
		for range 15 {
			c := dialFrom(t, src, addr)
			_, err := fmt.Fprintf(c, "POST /v1/registration/unpark?stream=s&id=i HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{", addr)
			require.NoError(t, err)
			held = append(held, c)
		}
	}

	begin := time.Now()
	// Shorter than every limit above: answered because it was served, not
	// because the others timed out.
	client := clientFrom("127.0.0.2", 2*time.Second)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/v1/registrations", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := client.Do(req)
	require.NoError(t, err, "the operator's request among %d held connections", len(held))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Logf("answered in %v with %d connections held", time.Since(begin), len(held))
	open := 0
	for _, c := range held {
		if stillOpen(c) {
			open++
		}
	}
	require.Greater(t, open, len(held)*9/10, "the held connections were open while the operator was answered")

	// One address past its limit: the connections over it are closed when
	// accepted; those under it are served.
	served := 0
	for range limits.MaxConnsPerClient + 10 {
		if idleAfterRefusal(t, dialFrom(t, "127.0.0.30", addr), addr) {
			served++
		}
	}
	require.Equal(t, limits.MaxConnsPerClient, served, "connections served to one address")

	for i, c := range held {
		require.NoError(t, closedByServer(c, 10*time.Second), "held connection %d (%s)", i, map[bool]string{true: "idle after a refusal", false: "POST without its body"}[i%30 < 15])
	}
}

// Guessing the token is slowed per client address on the APIs as on the
// page (they share one count): after 10 wrong tokens an address gets 429
// with Retry-After, the right token included, and it is logged; the right
// token still works from another address. 646 guesses found a two-letter
// token in 0.64 s before.
func TestTokenGuessesAreThrottledPerClient(t *testing.T) {
	var logs logtest.Buffer
	d := start(t, Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{webhook.New()},
		AdminAddr: "127.0.0.1:0", AdminToken: testToken, APIAddr: "127.0.0.1:0", APIToken: testToken,
		Logger: logs.Logger()})
	clients := map[string]*http.Client{}
	ask := func(src, addr, token string) *http.Response {
		if clients[src] == nil {
			clients[src] = clientFrom(src, 5*time.Second)
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/v1/registrations", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := clients[src].Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	codes := map[int]int{}
	for i := range 100 {
		addr := []string{d.Addrs.Admin, d.Addrs.API}[i%2]
		codes[ask("127.0.0.5", addr, fmt.Sprintf("%032x", i)).StatusCode]++
	}
	require.Equal(t, map[int]int{http.StatusUnauthorized: 10, http.StatusTooManyRequests: 90}, codes, "100 guesses from one address, on both APIs")
	resp := ask("127.0.0.5", d.Addrs.Admin, testToken)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the right token from the guessing address")
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, ask("127.0.0.6", d.Addrs.Admin, testToken).StatusCode, "the right token from another address")
	require.Equal(t, http.StatusOK, ask("127.0.0.6", d.Addrs.API, testToken).StatusCode)

	log := logs.String()
	require.Equal(t, 10, strings.Count(log, "authentication failed"), log)
	require.Equal(t, 1, strings.Count(log, "too many failed authentications"), log)
	require.Contains(t, log, "client=127.0.0.5/32")
	require.NotContains(t, log, testToken)
}
