package main_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A command that reads or delivers refuses a SQLite path with no file,
// naming it and --database, exits 2 and creates nothing: a mistyped path
// must not serve a new, empty database. register, append and migrate up
// create one.
func TestOnlyCreatingCommandsCreateASQLiteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "typo.db")
	h := newHerald(t, "sqlite:"+path)
	for _, args := range [][]string{
		{"sweep", "--namespace", "webhook"},
		{"run", "--metrics-addr", "", "--admin-addr", ""},
		{"status"},
		{"registrations", "--parked"},
		{"records", "--stream", "s"},
		{"evidence", "--stream", "s", "--id", "r"},
		{"record-status", "--stream", "s", "--seq", "1"},
		{"hosts"},
		{"streams"},
		{"prune"},
		{"skip", "--stream", "s", "--id", "r", "--to-seq", "2"},
		{"unregister", "--stream", "s", "--id", "r"},
	} {
		r := h.run("", args...)
		require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "no herald database at sqlite:"+path, args)
		require.Contains(t, r.stderr, "--database", args)
		require.Empty(t, r.stdout, args)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries, "%v created a file", args)
	}

	for i, args := range [][]string{
		{"migrate", "up"},
		{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x", "--secret", secret},
		{"append", "--stream", "s", "--id", "e1", "--kind", "k"},
	} {
		db := filepath.Join(dir, "new", string(rune('a'+i))+".db")
		require.NoError(t, os.MkdirAll(filepath.Dir(db), 0o755))
		r := newHerald(t, "sqlite:"+db).run(`{"a":1}`, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		_, err := os.Stat(db)
		require.NoError(t, err, "%v creates the database", args)
	}
	// And a sweep serves the file migrate up made.
	r := newHerald(t, "sqlite:"+filepath.Join(dir, "new", "a.db")).run("", "sweep", "--namespace", "webhook", "--at", "2026-03-15T11:00:00Z")
	require.Equal(t, 0, r.code, r.stderr)
}

// A sweep whose only delivery failed at host level (connection refused)
// names the host, its failures in a row and what herald does next, in
// words and as failed_hosts. It exits 0: a host that fails is herald's
// normal work (its registrations wait, nothing parks), not a sweep that
// needs attention (hosts_test.go).
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

// A --private-key-file (or a file: secret) that cannot be read is a usage
// error (exit 2) naming the flag and the path, quoted: a path is the
// user's text and may hold control bytes. Nothing is created.
func TestUnreadableKeyFileNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	h := newHerald(t, "sqlite:"+db)
	missing := filepath.Join(dir, "no\x1b[31mkey\n.pem")
	r := h.run("", "register", "--stream", "actor/alice", "--id", "https://b.example/inbox", "--namespace", "activitypub",
		"--url", "https://b.example/inbox", "--key-id", "https://a.example/users/alice#main-key", "--private-key-file", missing)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, fmt.Sprintf("--private-key-file %q: no such file or directory", missing))
	require.NotContains(t, r.stderr, "\x1b", "the path is quoted, its bytes escaped")
	require.NotContains(t, r.stderr, "open "+dir, "the os error's unquoted copy of the path is left out")

	r = h.run("", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://b.example/hooks",
		"--secret", "file:"+missing)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, fmt.Sprintf("--secret %q: no such file or directory", "file:"+missing))
	require.NotContains(t, r.stderr, "\x1b")

	_, err := os.Stat(db)
	require.ErrorIs(t, err, os.ErrNotExist, "a refused register creates nothing")
}

// A bad value's error names the flag the user typed, not the field the
// library calls it ("to seq", "url", "registration id", Options.Timeout,
// AllowHosts[0]).
func TestBadValuesNameTheFlag(t *testing.T) {
	h := newHerald(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	h.ok("register", "--stream", "orders", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/in", "--secret", secret)
	for _, c := range []struct {
		args      []string
		says, not string
	}{
		{[]string{"skip", "--stream", "orders", "--id", "r", "--to-seq", "9"}, "invalid --to-seq: is 9", "to seq"},
		{[]string{"rewind", "--stream", "orders", "--id", "r", "--to-seq", "5"}, "invalid --to-seq: is 5", "to seq"},
		{[]string{"register", "--stream", "orders", "--id", "r", "--namespace", "webhook", "--url", "https://u:p@hooks.example/in", "--secret", secret},
			"invalid --url: has userinfo", "invalid url"},
		{[]string{"register", "--stream", "orders", "--id", "r\x7f", "--namespace", "webhook", "--url", "https://hooks.example/in", "--secret", secret},
			"invalid --id: ", "registration id"},
		{[]string{"sweep", "--namespace", "webhook", "--timeout", "1h"}, "invalid --timeout: is 1h0m0s: it must be from 1ms to 10m0s", "Options.Timeout"},
		{[]string{"run", "--allow-host", "ok.example", "--allow-host", "*.*.example", "--metrics-addr", "", "--admin-addr", ""},
			`invalid --allow-host (the 2nd): "*.*.example" has a wildcard`, "AllowHosts"},
	} {
		r := h.run("", c.args...)
		require.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.says, c.args)
		require.NotContains(t, r.stderr, c.not, c.args)
		require.NotContains(t, r.stderr, "transport: new", c.args)
	}
}

// herald records says when more records exist past --limit (and the
// --from-seq that reads them), and when records it was asked for were
// pruned (the oldest kept seq), in words and in --json.
func TestRecordsSaysWhatThePageDoesNotShow(t *testing.T) {
	h := newHerald(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	for i := 1; i <= 5; i++ {
		r := h.run(`{}`, "append", "--stream", "orders/1", "--id", fmt.Sprintf("e%d", i), "--kind", "k")
		require.Equal(t, 0, r.code, r.stderr)
	}
	out := h.ok("records", "--stream", "orders/1", "--limit", "2")
	require.Contains(t, out, "More records up to #5: herald records --database "+h.db+" --stream orders/1 --from-seq 3 --limit 2\n")
	require.NotContains(t, out, "pruned")
	require.NotContains(t, h.ok("records", "--stream", "orders/1"), "More records", "the whole stream fits")

	// A registration whose cursor is 3 has acknowledged #1 and #2: prune them.
	h.ok("register", "--stream", "orders/1", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/in",
		"--secret", secret, "--from-seq", "3")
	h.ok("prune", "--retain", "0s", "--at", "2099-01-01T00:00:00Z")
	out = h.ok("records", "--stream", "orders/1", "--limit", "2")
	require.Contains(t, out, "Records before #3 were pruned (retention): #3 is the oldest kept.\n")
	require.Contains(t, out, "More records up to #5: herald records --database "+h.db+" --stream orders/1 --from-seq 5 --limit 2\n")
	require.NotContains(t, out, "e1")

	var page struct {
		Stream      string `json:"stream"`
		Head        uint64 `json:"head"`
		OldestSeq   uint64 `json:"oldest_seq"`
		More        bool   `json:"more"`
		NextFromSeq uint64 `json:"next_from_seq"`
		Pruned      bool   `json:"pruned"`
		Records     []struct {
			Seq uint64 `json:"seq"`
		} `json:"records"`
	}
	h.json(&page, "records", "--stream", "orders/1", "--limit", "2")
	require.Equal(t, "orders/1", page.Stream)
	require.Equal(t, uint64(5), page.Head)
	require.Equal(t, uint64(3), page.OldestSeq)
	require.True(t, page.More)
	require.Equal(t, uint64(5), page.NextFromSeq)
	require.True(t, page.Pruned)
	require.Len(t, page.Records, 2)
	require.Equal(t, uint64(3), page.Records[0].Seq)

	h.json(&page, "records", "--stream", "orders/1", "--from-seq", "4")
	require.False(t, page.More, "#4 and #5 are all there is")
	require.False(t, page.Pruned, "nothing asked for was pruned")
	require.Len(t, page.Records, 2)
}

// Evidence of a Retry-After says what herald does (the capped wait), and
// what the receiver asked beside it.
func TestEvidenceShowsTheCappedRetryAfter(t *testing.T) {
	h := newHerald(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "2592000") // 30 days
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	h.ok("register", "--stream", "orders", "--id", "r", "--namespace", "webhook", "--url", srv.URL+"/in", "--secret", secret)
	r := h.run(`{}`, "append", "--stream", "orders", "--id", "o-1", "--kind", "k")
	require.Equal(t, 0, r.code, r.stderr)
	h.ok(append([]string{"sweep", "--namespace", "webhook", "--at", "2026-03-15T11:00:00Z"}, allow...)...)

	out := h.ok("evidence", "--stream", "orders", "--id", "r")
	require.Contains(t, out, "2026-03-15 12:00:00Z", "the next attempt is an hour on: --max-retry-after's default")
	require.Contains(t, out, "503 Service Unavailable; retry after 1h (capped; the receiver asked 30d)")
	require.NotContains(t, out, "Retry-After 720h")

	r = h.run("", append([]string{"sweep", "--namespace", "webhook", "--at", "2026-03-15T12:00:00Z", "--max-retry-after", "2h"}, allow...)...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, h.ok("evidence", "--stream", "orders", "--id", "r"), "retry after 2h (capped; the receiver asked 30d)")
}

// Two registrations that "stream/id" would print alike (a/b + c, a + b/c)
// are told apart in every command's words: stream=… id=…, a part that
// needs it quoted.
func TestRegistrationNamesAreUnambiguous(t *testing.T) {
	h := newHerald(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	for _, c := range []struct{ stream, id, name string }{
		{"a/b", "c", "stream=a/b id=c"},
		{"a", "b/c", "stream=a id=b/c"},
		{"a", "b c", `stream=a id="b c"`},
	} {
		r := h.run(`{}`, "append", "--stream", c.stream, "--id", c.stream+"|"+c.id, "--kind", "k")
		require.Equal(t, 0, r.code, r.stderr)
		reg := []string{"register", "--stream", c.stream, "--id", c.id, "--namespace", "webhook", "--url", "https://hooks.example/in", "--secret", secret}
		require.Contains(t, h.ok(reg...), "Registered "+c.name+": webhook to hooks.example:443", c.name)
		require.Contains(t, h.ok(reg...), "Updated "+c.name+": webhook", c.name)
		require.Contains(t, h.ok("skip", "--stream", c.stream, "--id", c.id, "--to-seq", "2"), c.name+": cursor 1 → 2", c.name)
		require.Contains(t, h.ok("rewind", "--stream", c.stream, "--id", c.id, "--to-seq", "1"), c.name+": cursor 2 → 1", c.name)
		require.Contains(t, h.ok("unpark", "--stream", c.stream, "--id", c.id), c.name+" was not parked; nothing changed.", c.name)
		require.Contains(t, h.ok("unregister", "--stream", c.stream, "--id", c.id), "Unregistered "+c.name+" (webhook to", c.name)
		for _, args := range [][]string{
			{"unpark", "--stream", c.stream, "--id", c.id},
			{"skip", "--stream", c.stream, "--id", c.id, "--to-seq", "2"},
			{"evidence", "--stream", c.stream, "--id", c.id},
			{"unregister", "--stream", c.stream, "--id", c.id},
		} {
			r := h.run("", args...)
			require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
			require.Contains(t, r.stderr, "no registration "+c.name+": not found", args)
		}
	}
}
