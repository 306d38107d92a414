package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/bintest"
	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store/postgres"
)

// The binary under test, built once by TestMain.
var bin string

// keyring seals the configs of every herald the tests run: TestMain gives
// it to them as HERALD_KEYRING, which PostgreSQL needs to store a secret.
var keyring = seal.Generate()

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herald-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if bin, err = bintest.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HERALD_KEYRING", string(keyring.Marshal()))
	code := pgtest.Run(m) // a throwaway PostgreSQL for the tests that use one
	os.RemoveAll(dir)
	os.Exit(code)
}

// herald runs the binary against one database, as a user would.
type herald struct {
	t   *testing.T
	db  string
	dir string
}

func newHerald(t *testing.T, db string) *herald {
	return &herald{t: t, db: db, dir: t.TempDir()}
}

type result struct {
	stdout, stderr string
	code           int
}

func (h *herald) run(stdin string, args ...string) result {
	h.t.Helper()
	cmd := exec.Command(bin, append([]string{"--database", h.db}, args...)...)
	cmd.Dir = h.dir
	stdout, stderr, code := bintest.Run(h.t, cmd, stdin)
	return result{stdout: stdout, stderr: stderr, code: code}
}

// ok runs a command that must exit 0 and returns its stdout.
func (h *herald) ok(args ...string) string {
	h.t.Helper()
	r := h.run("", args...)
	require.Equal(h.t, 0, r.code, "herald %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.stdout, r.stderr)
	return r.stdout
}

func (h *herald) json(v any, args ...string) {
	h.t.Helper()
	out := h.ok(append(args, "--json")...)
	require.NoError(h.t, json.Unmarshal([]byte(out), v), "herald %s --json printed %q", strings.Join(args, " "), out)
}

// receiver is a real HTTP receiver on loopback whose answer per path the
// test sets.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	answers map[string][]int // path → statuses to answer, in order; then 200
	got     map[string][]string
	arrived chan string // path of every accepted request
	hold    map[string]chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{answers: map[string][]int{}, got: map[string][]string{}, arrived: make(chan string, 1000), hold: map[string]chan struct{}{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		hold := r.hold[req.URL.Path]
		r.mu.Unlock()
		if hold != nil {
			r.arrived <- "held:" + req.URL.Path
			<-hold
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if q := r.answers[req.URL.Path]; len(q) > 0 {
			r.answers[req.URL.Path] = q[1:]
			if q[0] == http.StatusServiceUnavailable {
				w.Header().Set("Retry-After", "30")
			}
			http.Error(w, http.StatusText(q[0]), q[0])
			return
		}
		r.got[req.URL.Path] = append(r.got[req.URL.Path], string(body))
		w.WriteHeader(http.StatusNoContent)
		r.arrived <- req.URL.Path
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) answer(path string, statuses ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[path] = statuses
}

func (r *receiver) bodies(path string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got[path]...)
}

type view struct {
	Stream    string `json:"stream"`
	ID        string `json:"id"`
	NextSeq   uint64 `json:"next_seq"`
	Head      uint64 `json:"head"`
	Attempts  int    `json:"attempts"`
	Parked    bool   `json:"parked"`
	State     string `json:"state"`
	LastError string `json:"last_error"`
	NextAt    string `json:"next_attempt_at"`
}

type report struct {
	Registrations, Records, Deliveries, Retries, Parked int
	NeedsAttention                                      bool `json:"needs_attention"`
}

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var allow = []string{"--allow-http", "--allow-private-network"}

func sweep(h *herald, at string, wantCode int) report {
	h.t.Helper()
	r := h.run("", append([]string{"sweep", "--namespace", "webhook", "--at", at, "--json"}, allow...)...)
	require.Equal(h.t, wantCode, r.code, "sweep at %s: %s %s", at, r.stdout, r.stderr)
	var rep report
	require.NoError(h.t, json.Unmarshal([]byte(r.stdout), &rep))
	return rep
}

func get(h *herald, id string) view {
	h.t.Helper()
	var all []view
	h.json(&all, "registrations", "--stream", "orders")
	for _, v := range all {
		if v.ID == id {
			return v
		}
	}
	h.t.Fatalf("registration %s not listed", id)
	return view{}
}

// The operator's whole path through the CLI: migrate, register, append,
// sweep at stated instants through a 503 with Retry-After, a 410, a
// recovery; list parked as table and JSON; unpark; rewind; skip;
// record-status.
func testOperatorJourney(t *testing.T, db string) {
	h := newHerald(t, db)
	recv := newReceiver(t)
	h.ok("migrate", "up")
	require.Contains(t, h.ok("migrate", "status"), "APPLIED")
	// The JSON of migrate status is an interface for scripts: its keys are
	// pinned here, whatever the store types behind it become.
	var schema map[string]any
	h.json(&schema, "migrate", "status")
	require.ElementsMatch(t, []string{"database", "current", "latest", "migrations"}, slices.Collect(maps.Keys(schema)))
	require.NotEmpty(t, schema["database"])
	require.Equal(t, schema["latest"], schema["current"])
	migrations, ok := schema["migrations"].([]any)
	require.True(t, ok && len(migrations) > 0, "migrations: %v", schema["migrations"])
	first, ok := migrations[0].(map[string]any)
	require.True(t, ok, "migration: %v", migrations[0])
	require.ElementsMatch(t, []string{"version", "name", "applied"}, slices.Collect(maps.Keys(first)))
	require.Equal(t, true, first["applied"])

	for _, id := range []string{"ok", "flaky", "gone"} {
		out := h.ok("register", "--stream", "orders", "--id", id, "--namespace", "webhook", "--url", recv.URL+"/"+id, "--secret", secret)
		require.Contains(t, out, "Registered stream=orders id="+id)
		require.NotContains(t, out, secret)
	}
	lines := filepath.Join(h.dir, "orders.jsonl")
	require.NoError(t, os.WriteFile(lines, []byte(
		`{"id":"o-1","kind":"order.created","payload":{"n":1}}`+"\n"+
			`{"id":"o-2","kind":"order.paid","payload":{"n":2}}`+"\n"), 0o600))
	h.ok("append", "--stream", "orders", "--file", lines)
	r := h.run(`{"n":3}`, "append", "--stream", "orders", "--id", "o-3", "--kind", "order.shipped")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "orders#3")

	recv.answer("/flaky", 503, 503)
	recv.answer("/gone", 410)
	rep := sweep(h, "2026-03-15T11:00:00Z", 3) // exit 3: a registration was parked
	require.Equal(t, report{Registrations: 3, Records: 3, Deliveries: 3, Retries: 1, Parked: 1, NeedsAttention: true}, rep)
	require.Equal(t, []string{`{"n":1}`, `{"n":2}`, `{"n":3}`}, recv.bodies("/ok"))
	flaky := get(h, "flaky")
	require.Equal(t, uint64(1), flaky.NextSeq)
	require.Equal(t, "2026-03-15T11:00:30Z", flaky.NextAt, "Retry-After: 30 from the sweep's instant")

	require.Zero(t, sweep(h, "2026-03-15T11:00:29Z", 0).Registrations, "not before the receiver's instant")
	require.Equal(t, 1, sweep(h, "2026-03-15T11:00:30Z", 0).Retries, "503 again")
	rep = sweep(h, "2026-03-15T11:01:00Z", 0)
	require.Equal(t, 3, rep.Deliveries, "recovered")
	require.Equal(t, uint64(4), get(h, "flaky").NextSeq)

	table := h.ok("registrations", "--parked")
	require.Contains(t, table, "STATE")
	require.Contains(t, table, "gone")
	require.Contains(t, table, "410")
	require.NotContains(t, table, "flaky")
	var parked []view
	h.json(&parked, "registrations", "--parked")
	require.Len(t, parked, 1)
	require.Equal(t, "gone", parked[0].ID)
	require.True(t, parked[0].Parked)
	require.Equal(t, uint64(1), parked[0].NextSeq, "parked with its cursor intact")
	require.Contains(t, h.ok("evidence", "--stream", "orders", "--id", "gone"), "parked")

	require.Contains(t, h.ok("unpark", "--stream", "orders", "--id", "gone", "--at", "2026-03-15T11:02:00Z"), "Unparked stream=orders id=gone")
	rep = sweep(h, "2026-03-15T11:02:00Z", 0)
	require.Equal(t, 3, rep.Deliveries)
	require.Equal(t, []string{`{"n":1}`, `{"n":2}`, `{"n":3}`}, recv.bodies("/gone"), "resumed at the first unacknowledged record")

	h.ok("rewind", "--stream", "orders", "--id", "ok", "--to-seq", "2", "--at", "2026-03-15T11:03:00Z")
	sweep(h, "2026-03-15T11:03:00Z", 0)
	require.Equal(t, []string{`{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":2}`, `{"n":3}`}, recv.bodies("/ok"), "rewind replays from #2")

	require.NoError(t, os.WriteFile(lines, []byte(`{"id":"o-4","kind":"order.refunded","payload":{"n":4}}`+"\n"), 0o600))
	h.ok("append", "--stream", "orders", "--file", lines)
	h.ok("skip", "--stream", "orders", "--id", "flaky", "--to-seq", "5", "--reason", "refunds are not for this receiver", "--at", "2026-03-15T11:04:00Z")
	var status struct {
		Acknowledged    []view `json:"acknowledged"`
		NotAcknowledged []view `json:"not_acknowledged"`
	}
	h.json(&status, "record-status", "--id", "o-4")
	require.Len(t, status.Acknowledged, 1)
	require.Equal(t, "flaky", status.Acknowledged[0].ID, "skipped counts as past the record")
	require.Len(t, status.NotAcknowledged, 2)

	bad := h.run("", "skip", "--stream", "orders", "--id", "flaky", "--to-seq", "99")
	require.Equal(t, 2, bad.code, "a seq out of range is bad input")
	require.Contains(t, bad.stderr, "invalid --to-seq")
	require.Equal(t, uint64(5), get(h, "flaky").NextSeq, "and changes nothing")
}

func TestOperatorJourneySQLite(t *testing.T) {
	testOperatorJourney(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
}

func TestOperatorJourneyPostgres(t *testing.T) {
	db := pgtest.NewDatabase(t)
	h := newHerald(t, db)
	r := h.run("", "registrations")
	require.Equal(t, 1, r.code, "an unmigrated database is refused")
	require.Contains(t, r.stderr, "herald migrate up")
	testOperatorJourney(t, db)
}

// The daemon delivers an append made by another process, and on SIGTERM
// mid-delivery lets the request finish, saves the cursor and exits 0.
func testDaemon(t *testing.T, db string, every string) {
	h := newHerald(t, db)
	recv := newReceiver(t)
	h.ok("migrate", "up")
	h.ok("register", "--stream", "orders", "--id", "ok", "--namespace", "webhook", "--url", recv.URL+"/ok", "--secret", secret)

	daemon := exec.Command(bin, append([]string{"--database", db, "run", "--every", every, "--metrics-addr", "127.0.0.1:0", "--admin-addr", ""}, allow...)...)
	daemon.Dir = h.dir
	var logs bytes.Buffer
	daemon.Stdout, daemon.Stderr = &logs, &logs
	require.NoError(t, daemon.Start())
	exited := make(chan error, 1)
	go func() { exited <- daemon.Wait() }()
	defer func() {
		if daemon.ProcessState == nil {
			_ = daemon.Process.Kill()
		}
	}()

	r := h.run(`{"n":1}`, "append", "--stream", "orders", "--id", "o-1", "--kind", "order.created")
	require.Equal(t, 0, r.code, r.stderr)
	select {
	case p := <-recv.arrived:
		require.Equal(t, "/ok", p)
	case <-time.After(30 * time.Second):
		t.Fatalf("the daemon did not deliver the append; logs:\n%s", logs.String())
	}

	// Hold the next delivery at the receiver, send SIGTERM while it is in
	// flight, then let it finish.
	hold := make(chan struct{})
	recv.mu.Lock()
	recv.hold["/ok"] = hold
	recv.mu.Unlock()
	r = h.run(`{"n":2}`, "append", "--stream", "orders", "--id", "o-2", "--kind", "order.paid")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "held:/ok", <-recv.arrived)
	require.NoError(t, daemon.Process.Signal(syscall.SIGTERM))
	close(hold)
	require.Equal(t, "/ok", <-recv.arrived)
	select {
	case err := <-exited:
		require.NoError(t, err, "exit 0 on SIGTERM; logs:\n%s", logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the daemon did not stop on SIGTERM; logs:\n%s", logs.String())
	}
	require.Contains(t, logs.String(), "stopped")

	v := get(h, "ok")
	require.Equal(t, uint64(3), v.NextSeq, "the delivery in flight at SIGTERM was acknowledged and saved")
	require.Equal(t, []string{`{"n":1}`, `{"n":2}`}, recv.bodies("/ok"), "each record once: none lost, none sent twice")
}

func TestDaemonSQLite(t *testing.T) {
	testDaemon(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"), "200ms")
}

// On PostgreSQL the daemon sweeps every hour here: the appends reach the
// receiver because NOTIFY wakes it, not because an interval passed.
func TestDaemonPostgres(t *testing.T) {
	testDaemon(t, pgtest.NewDatabase(t), "1h")
}

// append --file checks the whole file against itself and the journal
// before the first batch: a conflict or a sealed stream found on a late
// line leaves nothing appended.
func TestAppendFileChecksTheWholeFileFirst(t *testing.T) {
	h := newHerald(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	r := h.run(`{"n":1}`, "append", "--stream", "orders", "--id", "o-1", "--kind", "k")
	require.Equal(t, 0, r.code, r.stderr)
	r = h.run(`{}`, "append", "--stream", "closed", "--id", "c-1", "--kind", "k", "--final")
	require.Equal(t, 0, r.code, r.stderr)
	var many strings.Builder
	for i := 1; i <= 600; i++ {
		fmt.Fprintf(&many, `{"stream":"bulk","id":"b-%d","kind":"k","payload":{}}`+"\n", i)
	}
	for _, tc := range []struct {
		name, lines, says string
		code              int
	}{
		{"an existing id with other content", many.String() + `{"stream":"orders","id":"o-1","kind":"k","payload":{"n":2}}`, `line 601: record id "o-1" already exists`, 2},
		{"a sealed stream", many.String() + `{"stream":"closed","id":"c-2","kind":"k","payload":{}}`, `line 601: stream "closed" is sealed`, 2},
		{"an id repeated in the file", many.String() + `{"stream":"bulk","id":"b-1","kind":"k","payload":{}}`, `line 601: invalid id: "b-1" repeats the id of line 1`, 2},
		{"a record after the file's own final record", `{"stream":"s","id":"s-1","kind":"k","payload":{},"final":true}` + "\n" + many.String() + `{"stream":"s","id":"s-2","kind":"k","payload":{}}`, `line 602: invalid stream: "s" is sealed by the final record of line 1`, 2},
	} {
		path := filepath.Join(h.dir, "f.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(tc.lines+"\n"), 0o600))
		r := h.run("", "append", "--file", path)
		require.Equal(t, tc.code, r.code, "%s: %s", tc.name, r.stderr)
		require.Contains(t, r.stderr, tc.says, tc.name)
		require.Contains(t, r.stderr, "nothing was appended", tc.name)
		require.Contains(t, h.run("", "record-status", "--id", "b-1").stderr, "not found", "%s: the batches before it were not appended", tc.name)
	}
	// Lines the journal already holds with the same content are a no-op:
	// repeating a file that was appended succeeds.
	path := filepath.Join(h.dir, "again.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"stream":"orders","id":"o-1","kind":"k","payload":{"n":1}}`+"\n"+`{"stream":"orders","id":"o-2","kind":"k","payload":{"n":2}}`+"\n"), 0o600))
	h.ok("append", "--file", path)
	h.ok("append", "--file", path)
}

// TestStatusListsRefusedRecords: a record whose transaction commits after
// its stream's final record was numbered is refused by the sequencer; herald
// status lists it with the reason, in text and JSON.
func TestStatusListsRefusedRecords(t *testing.T) {
	ctx := t.Context()
	db := pgtest.NewDatabase(t)
	h := newHerald(t, db)
	h.ok("migrate", "up")
	st, err := postgres.Open(ctx, db, postgres.WithKeyring(keyring))
	require.NoError(t, err)
	defer st.Close()
	late, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer late.Rollback(ctx)
	_, err = st.AppendTx(ctx, late, "task/1", journal.Entry{ID: "late", Kind: "statusUpdate", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = st.Append(ctx, "task/1", journal.Entry{ID: "done", Kind: "statusUpdate", Payload: []byte(`{}`), Final: true})
	require.NoError(t, err)
	require.NoError(t, late.Commit(ctx))
	_, err = st.Sequence(ctx)
	require.NoError(t, err)

	out := h.ok("status")
	require.Contains(t, out, "Refused records")
	require.Regexp(t, `task/1\s+late\s+statusUpdate\s+\S+ \S+\s+committed after the stream's final record #1 was sequenced`, out)
	var js struct {
		Refused []struct{ Stream, ID, Reason string } `json:"refused"`
	}
	h.json(&js, "status")
	require.Len(t, js.Refused, 1)
	require.Equal(t, "late", js.Refused[0].ID)
	require.Contains(t, js.Refused[0].Reason, "final record #1")
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
