package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A sweep that leaves records behind a cursor (a turn gave its slot up to a
// waiting claim) exits 3, as a saturated one does: a scheduler running one
// sweep at a time must know to sweep again soon.
func TestSweepWithABacklogNeedsAttention(t *testing.T) {
	srv := answering(t, http.StatusNoContent)
	db := newDB(t)
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		heraldOK(t, db, "", "register", "--stream", "s", "--id", id, "--namespace", "webhook", "--url", srv.URL+"/"+id, "--secret", goodSecret)
	}
	var lines strings.Builder
	for i := range 50 {
		fmt.Fprintf(&lines, `{"stream":"s","id":"e%d","kind":"k","payload":{}}`+"\n", i)
	}
	file := filepath.Join(t.TempDir(), "records.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(lines.String()), 0o600))
	heraldOK(t, db, "", "append", "--file", file)

	r := runCLI(t, db, "", "sweep", "--namespace", "webhook", "--allow-http", "--allow-private-network",
		"--drain-page", "5", "--max-per-host", "2", "--json")
	var rep struct {
		Backlog        int  `json:"backlog"`
		Saturated      bool `json:"saturated"`
		NeedsAttention bool `json:"needs_attention"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout+r.stderr)
	require.Positive(t, rep.Backlog, "six registrations over two host slots: turns gave their slots up")
	require.True(t, rep.NeedsAttention)
	require.Equal(t, ExitAttention, r.code, r.stderr)
}

// The worker flags that push.NewWorker would refuse are usage errors that
// name the flag, before sweep or run opens (and creates) its database.
func TestWorkerFlagsOutOfRangeOpenNothing(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"--max-attempts", "0", "--max-attempts 0 must be at least 1"},
		{"--max-in-flight", "0", "--max-in-flight 0 must be at least 1"},
		{"--drain-page", "10001", "--drain-page 10001 must be from 1 to 10000"},
		{"--page-bytes", "0", "--page-bytes 0 must be from 1 to 1073741824"},
		{"--lease", "1s", "--lease 1s must be from 2s to 1h0m0s"},
		{"--max-retry-after", "10ms", "--max-retry-after 10ms must be at least 1s"},
	} {
		for _, cmd := range [][]string{{"sweep", "--namespace", "webhook"}, {"run", "--metrics-addr", "", "--admin-addr", ""}} {
			db := newDB(t)
			args := append(append([]string(nil), cmd...), c.flag, c.value)
			r := runCLI(t, db, "", args...)
			require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
			require.Contains(t, r.stderr, c.want, args)
			requireNoDB(t, db, "%v opened the database", args)
		}
	}
}

// --max-per-host out of range is a usage error (exit 2) that names the flag,
// before anything is opened: the database file is never created.
func TestMaxPerHostOutOfRange(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--max-per-host", "0", "--metrics-addr", "", "--admin-addr", ""},
		{"run", "--max-per-host", "-3", "--metrics-addr", "", "--admin-addr", ""},
		{"sweep", "--namespace", "webhook", "--max-per-host", "1025"},
	} {
		db := newDB(t)
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "--max-per-host", args)
		requireNoDB(t, db, "%v: the database was opened", args)
	}
}

func TestHostHorizonFlag(t *testing.T) {
	db := newDB(t)
	for _, args := range [][]string{
		{"sweep", "--namespace", "webhook", "--host-horizon", "59m"},
		{"sweep", "--namespace", "webhook", "--host-horizon", "8761h"},
		{"run", "--host-horizon", "1s"},
	} {
		code, _, errOut := runHostsCLI(t, db, args...)
		require.Equal(t, ExitUsage, code, "%v", args)
		require.Contains(t, errOut, "--host-horizon", "%v", args)
	}
	heraldOK(t, db, "", "migrate", "up") // a sweep serves a database that exists
	code, _, errOut := runHostsCLI(t, db, "sweep", "--namespace", "webhook", "--host-horizon", "72h", "--json")
	require.Equal(t, ExitOK, code, errOut)
}

// herald run listens before it opens its database: an address in use
// fails, naming it, having created and migrated nothing.
func TestRunOnABusyAddressCreatesNoDatabase(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	addr := busy.Addr().String()
	for _, flag := range []string{"--metrics-addr", "--admin-addr", "--api-addr"} {
		args := map[string]string{"--metrics-addr": "127.0.0.1:0", "--admin-addr": "", "--api-addr": ""}
		args[flag] = addr
		db := newDB(t)
		r := runCLI(t, db, "", "run", "--metrics-addr", args["--metrics-addr"], "--admin-addr", args["--admin-addr"], "--api-addr", args["--api-addr"])
		require.Equal(t, ExitError, r.code, "%s: %s", flag, r.stderr)
		require.Contains(t, r.stderr, flag+" "+addr, "the error names the flag and the address")
		require.Contains(t, r.stderr, "address already in use", flag)
		requireNoDB(t, db, "%s: a run that cannot listen created the database", flag)
	}
}

// herald run refuses an OTEL_* environment it cannot honour, naming the
// variable, before it opens anything.
func TestRunRefusesAnOTELEnvironmentItCannotHonour(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "", "migrate", "up")
	for k, v := range map[string]string{"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"} {
		env := map[string]string{k: v, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{"--database", "sqlite:" + db, "run", "--metrics-addr", "", "--admin-addr", ""},
			Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, func(name string) string { return env[name] })
		require.Equal(t, ExitUsage, code, "%s=%s: %s", k, v, errb.String())
		require.Contains(t, errb.String(), k, "the error names the variable")
	}
}

// A sweep that a registration's --rate holds reports it as paced and exits
// 0: the rate is no backlog to sweep at once. The bursts go at the sweeps'
// instants, one each half second at 2/s.
func TestSweepHeldByARateIsPacedNotAttention(t *testing.T) {
	srv := answering(t, http.StatusNoContent)
	db := newDB(t)
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", srv.URL+"/r", "--secret", goodSecret, "--rate", "2/s")
	for i := range 3 {
		heraldOK(t, db, "{}", "append", "--stream", "s", "--id", fmt.Sprintf("e%d", i), "--kind", "k")
	}
	type report struct {
		Records, Paced, Backlog int
		NeedsAttention          bool `json:"needs_attention"`
	}
	sweep := func(at string) (report, int) {
		r := runCLI(t, db, "", "sweep", "--namespace", "webhook", "--allow-http", "--allow-private-network", "--at", at, "--json")
		var rep report
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout+r.stderr)
		return rep, r.code
	}
	for _, c := range []struct {
		at   string
		want report
	}{
		{"2026-03-15T11:00:00Z", report{Records: 1, Paced: 1}},
		{"2026-03-15T11:00:00.25Z", report{}},
		{"2026-03-15T11:00:00.5Z", report{Records: 1, Paced: 1}},
		{"2026-03-15T11:00:01Z", report{Records: 1}},
	} {
		rep, code := sweep(c.at)
		require.Equal(t, c.want, rep, c.at)
		require.Equal(t, ExitOK, code, c.at)
	}
	out := heraldOK(t, db, "", "sweep", "--namespace", "webhook", "--allow-http", "--allow-private-network", "--at", "2026-03-15T11:00:01.5Z")
	require.NotContains(t, out, "--rate holds", "nothing left")
}

// A --lease past push.MaxLease is refused naming the flag before the
// database opens: 2562047h (time.Duration's largest) passed, and every
// claim of run or sweep then failed, its lease's end past the instants a
// store keeps.
func TestALeaseLongerThanMaxLeaseIsRefusedNamingTheFlag(t *testing.T) {
	for _, value := range []string{"2562047h", "1h0m1s"} {
		for _, cmd := range [][]string{{"sweep", "--namespace", "webhook"}, {"run", "--metrics-addr", "", "--admin-addr", ""}} {
			db := newDB(t)
			args := append(append([]string(nil), cmd...), "--lease", value)
			r := runCLI(t, db, "", args...)
			require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
			require.Contains(t, r.stderr, "must be from 2s to 1h0m0s", args)
			require.Contains(t, r.stderr, "--lease", args)
			requireNoDB(t, db, "%v opened the database", args)
		}
	}
}
