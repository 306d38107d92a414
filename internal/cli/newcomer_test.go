package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cliRun is one run of the herald command in-process, as a user types it.
type cliRun struct {
	stdout, stderr string
	code           int
}

// runCLI runs the command on the SQLite file db (a path) with stdin.
func runCLI(t *testing.T, db, stdin string, args ...string) cliRun {
	t.Helper()
	var out, errb bytes.Buffer
	if db != "" {
		args = append([]string{"--database", "sqlite:" + db}, args...)
	}
	code := Main(context.Background(), args, Stdio{In: strings.NewReader(stdin), Out: &out, Err: &errb}, func(string) string { return "" })
	return cliRun{stdout: out.String(), stderr: errb.String(), code: code}
}

// heraldOK runs a command that must exit 0.
func heraldOK(t *testing.T, db, stdin string, args ...string) string {
	t.Helper()
	r := runCLI(t, db, stdin, args...)
	require.Equal(t, ExitOK, r.code, "herald %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.stdout, r.stderr)
	return r.stdout
}

// Read-only commands refuse a database that is not there, naming the path
// and --database, and create nothing (issue 22, item 3).
func TestReadOnlyCommandsRefuseAMissingDatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	for _, args := range [][]string{
		{"status"},
		{"registrations"},
		{"evidence", "--stream", "s", "--id", "r"},
		{"record-status", "--stream", "s", "--seq", "1"},
		{"unpark", "--stream", "s", "--id", "r"},
		{"rewind", "--stream", "s", "--id", "r", "--to-seq", "1"},
		{"hosts"},
		{"hosts", "reset", "social.example:443"},
	} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "no herald database at sqlite:"+db, args)
		require.Contains(t, r.stderr, "--database", args)
		require.Empty(t, r.stdout, args)
		_, err := os.Stat(db)
		require.ErrorIs(t, err, os.ErrNotExist, "%v created the database", args)
	}
	inMissingFolder := filepath.Join(dir, "nope", "herald.db")
	r := runCLI(t, inMissingFolder, "", "status")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "no herald database at sqlite:"+inMissingFolder)

	// A command that writes creates it, as before.
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook",
		"--url", "https://hooks.example/x", "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.Contains(t, heraldOK(t, db, "", "registrations"), "hooks.example")
}

// A writer pointed into a folder that does not exist says so, instead of
// SQLite's "unable to open database file (14)" (item 5).
func TestMissingFolderIsNamed(t *testing.T) {
	db := filepath.Join(t.TempDir(), "nope", "herald.db")
	r := runCLI(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	require.Equal(t, ExitUsage, r.code, r.stderr) // a bad --database value, as a missing file is
	require.Contains(t, r.stderr, "no folder for a new herald database at sqlite:"+db+": create "+strconv.Quote(filepath.Dir(db))+" first")
	require.NoDirExists(t, filepath.Dir(db))
}

// migrate down drops data: without a terminal it needs --yes, and refuses
// with nothing changed; read-only commands after it do not migrate the file
// back up (item 6).
func TestMigrateDownNeedsYesAndStatusDoesNotUndoIt(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	before := heraldOK(t, db, "", "migrate", "status", "--json")

	r := runCLI(t, db, "yes\n", "migrate", "down")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "add --yes")
	require.Equal(t, before, heraldOK(t, db, "", "migrate", "status", "--json"), "a refused down changed nothing")

	heraldOK(t, db, "", "migrate", "down", "--yes")
	after := heraldOK(t, db, "", "migrate", "status", "--json")
	require.NotEqual(t, before, after)

	for _, args := range [][]string{{"status"}, {"registrations"}, {"record-status", "--stream", "s", "--seq", "1"}} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitError, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "herald migrate up", args)
		require.Equal(t, after, heraldOK(t, db, "", "migrate", "status", "--json"), "%v migrated the database", args)
	}
}

// register names, at once, every rule of the network guard the URL breaks
// and the flag that lifts it (item 4).
func TestRegisterWarnsOfEveryRefusal(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	reg := func(id, url string) cliRun {
		return runCLI(t, db, "", "register", "--stream", "s", "--id", id, "--namespace", "webhook",
			"--url", url, "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	}
	r := reg("local", "http://127.0.0.2:8080/hooks")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "scheme http is not allowed: https only; herald run/sweep --allow-http")
	require.Contains(t, r.stderr, "127.0.0.2 is in 127.0.0.0/8 (loopback); herald run/sweep --allow-private-network")
	require.Equal(t, 2, strings.Count(r.stderr, "note: "), r.stderr)

	r = reg("name", "https://localhost:8443/hooks")
	require.Contains(t, r.stderr, "host localhost (127.0.0.1) is in 127.0.0.0/8 (loopback); herald run/sweep --allow-private-network")

	r = reg("docs", "https://192.0.2.10/hooks")
	require.Contains(t, r.stderr, "192.0.2.10 is in 192.0.2.0/24 (documentation")
	require.NotContains(t, r.stderr, "--allow-", "no flag opens a documentation range")

	r = reg("public", "https://hooks.example/x")
	require.NotContains(t, r.stderr, "note:")
}

// With --json an error is a JSON object on stderr (item 5).
func TestJSONErrors(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	for _, args := range [][]string{
		{"status", "--json"},                        // no database: usage
		{"--json", "registrations", "--limit", "0"}, // bad value
		{"registrations", "--json", "--bogus"},      // a flag error, before --json is parsed
	} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		var e map[string]string
		require.NoError(t, json.Unmarshal([]byte(r.stderr), &e), "%v: stderr %q", args, r.stderr)
		require.NotEmpty(t, e["error"], args)
	}
}

// A payload over the limit is reported with its size, not where reading
// stopped (item 5).
func TestAppendNamesThePayloadSize(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	big := `"` + strings.Repeat("x", 5<<20) + `"`
	r := runCLI(t, db, big, "append", "--stream", "s", "--id", "big", "--kind", "k")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, fmt.Sprintf("is %d bytes, more than the limit of 1048576 (1 MiB)", len(big)))
}

// Appending an identical record again says it was already there; a file
// says how many were (item 7); counts are English.
func TestAppendSaysWhatExisted(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	require.Equal(t, "Appended s#1 (id e1).\n", heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k"))
	require.Equal(t, "Already in the journal: s#1 (id e1), same content; nothing was appended.\n",
		heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k"))
	var out []map[string]any
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k", "--json")), &out))
	require.Equal(t, true, out[0]["existed"])

	file := filepath.Join(dir, "records.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(`{"id":"e1","kind":"k","payload":{"a":1}}`+"\n"+`{"id":"e2","kind":"k","payload":{}}`+"\n"), 0o600))
	require.Equal(t, "Stored 2 records in 1 stream: 1 was already in the journal with the same content, 1 appended.\n",
		heraldOK(t, db, "", "append", "--stream", "s", "--file", file))
}

// register --kinds is validated, naming the flag, stored and shown (item 8).
func TestRegisterKinds(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	args := func(kinds string) []string {
		return []string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
			"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--kinds", kinds}
	}
	r := runCLI(t, db, "", args("order.*.paid")...)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `invalid --kinds: pattern "order.*.paid" may have one "*", at its end`)
	_, err := os.Stat(db)
	require.ErrorIs(t, err, os.ErrNotExist, "a refused register opened nothing")

	heraldOK(t, db, "", args("order.*, invoice.paid")...)
	out := heraldOK(t, db, "", "registrations")
	require.Contains(t, out, "KINDS")
	require.Contains(t, out, "order.*,invoice.paid")
	var regs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
	require.Equal(t, []any{"order.*", "invoice.paid"}, regs[0]["kinds"])
}

// records reads the journal, payloads shown safely (item 7).
func TestRecords(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	heraldOK(t, db, "{\"note\": \"line\\nbreak \\u001b[31m\"}", "append", "--stream", "s", "--id", "e1", "--kind", "order.created")
	heraldOK(t, db, "\x89PNG\r\n\x1a\n\x00\x00", "append", "--stream", "s", "--id", "e2", "--kind", "blob", "--content-type", "image/png")
	heraldOK(t, db, "raw\x1b[2Jtext", "append", "--stream", "s", "--id", "e3", "--kind", "note", "--content-type", "text/plain")

	out := heraldOK(t, db, "", "records", "--stream", "s")
	require.Contains(t, out, "SEQ")
	require.Contains(t, out, `{"note":"line\nbreak \u001b[31m"}`, "JSON is compacted; its escapes stay escapes")
	require.Contains(t, out, "(10 bytes, not UTF-8 text: see --json)")
	require.Contains(t, out, "raw‹U+001B›[2Jtext", "a control character never reaches the terminal: it is shown as its code point")
	require.NotContains(t, out, "\x1b")

	out = heraldOK(t, db, "", "records", "--stream", "s", "--from-seq", "2", "--limit", "1")
	require.Contains(t, out, "e2")
	require.NotContains(t, out, "e1")
	require.NotContains(t, out, "e3")

	var page struct{ Records []map[string]any }
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "records", "--stream", "s", "--json")), &page))
	recs := page.Records
	require.Len(t, recs, 3)
	require.Equal(t, map[string]any{"note": "line\nbreak \x1b[31m"}, recs[0]["payload"])
	require.Equal(t, "iVBORw0KGgoAAA==", recs[1]["payload_base64"])
	require.Equal(t, float64(3), recs[2]["seq"])

	for _, c := range []struct{ args, want string }{
		{"--from-seq 0", "--from-seq 0 must be 1 or more"},
		{"--limit 1001", "--limit 1001 must be from 1 to 1000"},
	} {
		r := runCLI(t, db, "", append([]string{"records", "--stream", "s"}, strings.Fields(c.args)...)...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, c.want)
	}
	require.Contains(t, heraldOK(t, db, "", "records", "--stream", "other"), "Stream other has no records from #1 (head 0).")
}

// unregister removes a registration, says where its cursor was, and leaves
// the journal alone (item 7).
func TestUnregister(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	out := heraldOK(t, db, "", "unregister", "--stream", "s", "--id", "r")
	require.Contains(t, out, "Unregistered stream=s id=r (webhook to hooks.example:443) at cursor 1, with 1 record not delivered")
	require.Contains(t, out, "--from-seq 1")
	require.Contains(t, heraldOK(t, db, "", "registrations"), "STREAM")
	require.NotContains(t, heraldOK(t, db, "", "registrations"), "hooks.example")
	require.Contains(t, heraldOK(t, db, "", "records", "--stream", "s"), "e1", "the journal keeps the record")

	r := runCLI(t, db, "", "unregister", "--stream", "s", "--id", "r")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "not found")
	r = runCLI(t, db, "", "unregister", "--stream", "s")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "needs --id")
}

// Counts are English: "1 record", not "1 records" (item 5).
func TestUnparkSaysOneRecord(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://192.0.2.10/x",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "later", "--namespace", "webhook", "--url", "https://192.0.2.10/y",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	r := runCLI(t, db, "", "sweep", "--namespace", "webhook", "--at", "2026-03-15T11:00:00Z")
	require.Equal(t, ExitAttention, r.code, r.stderr)
	require.Equal(t, "Unparked stream=s id=r: due now at cursor 1 (1 record to deliver).\n",
		heraldOK(t, db, "", "unpark", "--stream", "s", "--id", "r", "--at", "2026-03-15T11:01:00Z"))
	// An --at ahead of the clock is when it is due (found by a newcomer: it
	// said "due now").
	require.Equal(t, "Unparked stream=s id=later: due from 2099-01-01 00:00:00Z at cursor 1 (1 record to deliver).\n",
		heraldOK(t, db, "", "unpark", "--stream", "s", "--id", "later", "--at", "2099-01-01T00:00:00Z"))
}

// herald run refuses an OTEL_* environment it cannot honour, naming the
// variable, before it opens anything (issue 20).
func TestRunRefusesAnOTELEnvironmentItCannotHonour(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
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
