package main_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
)

type hostJSON struct {
	Host        string    `json:"host"`
	State       string    `json:"state"`
	Since       time.Time `json:"since"`
	Failures    int       `json:"failures"`
	NextProbeAt time.Time `json:"next_probe_at"`
	Held        int       `json:"held"`
}

// A host that refuses connections, through the binary: sweeps at stated
// instants bring it down without charging its registrations, herald hosts
// shows it holding them, nothing reaches it before the probe instant, and
// when it listens again the probe brings it up and every registration
// delivers everything, in order.
func testHostsJourney(t *testing.T, db string) {
	h := newHerald(t, db)
	h.ok("migrate", "up")
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // refused until it listens again

	ids := []string{"x0", "x1", "x2"}
	for _, id := range ids {
		h.ok("register", "--stream", "orders", "--id", id, "--namespace", "webhook", "--url", "http://"+addr+"/"+id, "--secret", secret)
	}
	for i := 1; i <= 2; i++ {
		r := h.run(`{"n":`+string(rune('0'+i))+`}`, "append", "--stream", "orders", "--id", "o-"+string(rune('0'+i)), "--kind", "k")
		require.Equal(t, 0, r.code, r.stderr)
	}
	var rep struct {
		HostFailures int `json:"host_failures"`
		Retries      int `json:"retries"`
		Parked       int `json:"parked"`
	}
	r := h.run("", append([]string{"sweep", "--namespace", "webhook", "--at", "2026-03-15T11:00:00Z", "--json", "--max-attempts", "1"}, allow...)...)
	require.Equal(t, 0, r.code, "host-level failures need no attention: %s %s", r.stdout, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, 3, rep.HostFailures)
	require.Zero(t, rep.Retries+rep.Parked, "with --max-attempts 1, a charged attempt would have parked")

	var hosts []hostJSON
	h.json(&hosts, "hosts")
	require.Len(t, hosts, 1)
	down := hosts[0]
	require.Equal(t, addr, down.Host)
	require.Equal(t, "down", down.State)
	require.Equal(t, 3, down.Held)
	require.True(t, down.Since.Equal(time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)))
	for _, id := range ids {
		v := get(h, id)
		require.Zero(t, v.Attempts, id)
		require.False(t, v.Parked, id)
	}

	var requests atomic.Int64
	var mu sync.Mutex
	got := map[string][]string{}
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		requests.Add(1)
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		got[req.URL.Path] = append(got[req.URL.Path], string(body))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	before := down.NextProbeAt.Add(-time.Second).Format(time.RFC3339Nano)
	h.run("", append([]string{"sweep", "--namespace", "webhook", "--at", before}, allow...)...)
	require.Zero(t, requests.Load(), "held until the probe instant, though the host listens again")
	h.ok(append([]string{"sweep", "--namespace", "webhook", "--at", down.NextProbeAt.Format(time.RFC3339Nano)}, allow...)...)
	require.Equal(t, int64(2), requests.Load(), "one probe: one registration's two records")
	h.json(&hosts, "hosts")
	require.Equal(t, "up", hosts[0].State, "the answer brought it up")
	h.ok(append([]string{"sweep", "--namespace", "webhook", "--at", down.NextProbeAt.Add(10 * time.Minute).Format(time.RFC3339Nano)}, allow...)...)
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		require.Equal(t, []string{`{"n":1}`, `{"n":2}`}, got["/"+id], id)
	}
}

func TestHostsJourneySQLite(t *testing.T) {
	testHostsJourney(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
}

func TestHostsJourneyPostgres(t *testing.T) {
	testHostsJourney(t, pgtest.NewDatabase(t))
}

// A sweep whose only delivery failed at host level (connection refused)
// names the host, its failures in a row and what herald does next, in
// words and as failed_hosts. It exits 0: a host that fails is herald's
// normal work (its registrations wait, nothing parks), not a sweep that
// needs attention.
func TestSweepSaysWhichHostFailed(t *testing.T) {
	h := newHerald(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // refused from now on
	h.ok("register", "--stream", "orders", "--id", "r", "--namespace", "webhook", "--url", "http://"+addr+"/in", "--secret", secret)
	r := h.run(`{"n":1}`, "append", "--stream", "orders", "--id", "o-1", "--kind", "k")
	require.Equal(t, 0, r.code, r.stderr)

	r = h.run("", append([]string{"sweep", "--namespace", "webhook", "--at", "2026-03-15T11:00:00Z"}, allow...)...)
	require.Equal(t, 0, r.code, "%s %s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "1 turn ended on a host-level failure: no attempt charged, nothing parked; the host backs off (see herald hosts).")
	require.Contains(t, r.stdout, "Host "+addr+" failed (1 in a row; down after 3): its registrations retry with backoff. Last error: ")
	require.Contains(t, r.stdout, "refused")

	// Two more failures bring it down: the report says so, with the probe.
	var rep struct {
		HostFailures int `json:"host_failures"`
		FailedHosts  []struct {
			Host        string    `json:"host"`
			State       string    `json:"state"`
			Failures    int       `json:"failures"`
			NextProbeAt time.Time `json:"next_probe_at"`
			LastError   string    `json:"last_error"`
		} `json:"failed_hosts"`
		NeedsAttention bool `json:"needs_attention"`
	}
	var out string
	for _, at := range []string{"2026-03-15T11:10:00Z", "2026-03-15T11:20:00Z"} {
		r = h.run("", append([]string{"sweep", "--namespace", "webhook", "--at", at, "--json"}, allow...)...)
		require.Equal(t, 0, r.code, "%s %s", r.stdout, r.stderr)
		out = r.stdout
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, 1, rep.HostFailures)
	require.False(t, rep.NeedsAttention)
	require.Len(t, rep.FailedHosts, 1, out)
	fh := rep.FailedHosts[0]
	require.Equal(t, addr, fh.Host)
	require.Equal(t, "down", fh.State)
	require.Equal(t, 3, fh.Failures)
	require.True(t, fh.NextProbeAt.After(time.Date(2026, 3, 15, 11, 20, 0, 0, time.UTC)), fh.NextProbeAt)
	require.Contains(t, fh.LastError, "refused")

	// Held until the probe: a sweep meanwhile serves nothing, and is fine.
	r = h.run("", append([]string{"sweep", "--namespace", "webhook", "--at", "2026-03-15T11:20:01Z"}, allow...)...)
	require.Equal(t, 0, r.code, "%s %s", r.stdout, r.stderr)
	require.False(t, strings.Contains(r.stdout, "Host "), r.stdout)
}
