package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A bad database URL from HERALD_DATABASE_URL is blamed on the variable,
// not on a --database the user never typed; a bad --database still names
// the flag (found by a newcomer).
func TestABadDatabaseNamesWhereItCameFrom(t *testing.T) {
	run := func(env map[string]string, args ...string) cliRun {
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, func(k string) string { return env[k] })
		return cliRun{stdout: out.String(), stderr: errb.String(), code: code}
	}
	r := run(map[string]string{"HERALD_DATABASE_URL": "garbage"}, "status")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `HERALD_DATABASE_URL "garbage": give sqlite:PATH`)
	require.NotContains(t, r.stderr, "--database")

	r = run(map[string]string{"HERALD_DATABASE_URL": "sqlite:"}, "status")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "HERALD_DATABASE_URL sqlite: needs a path")

	r = run(map[string]string{"HERALD_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "x.db")}, "--database", "garbage", "status")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `--database "garbage": give sqlite:PATH`, "the flag wins over the variable, and is named")
}

// A stream name with a bidirectional override reaches the terminal with
// the override shown as its code point, in append's answer and in the
// tables, never raw (found by a newcomer: append printed it raw).
func TestAHiddenCharacterOfAStreamIsShownAsItsCodePoint(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	const stream = "p\u202Eq"
	out := heraldOK(t, db, `{}`, "append", "--stream", stream, "--id", "c1", "--kind", "k")
	require.Equal(t, "Appended p‹U+202E›q#1 (id c1).\n", out)
	out = heraldOK(t, db, `{}`, "append", "--stream", stream, "--id", "c1", "--kind", "k")
	require.Contains(t, out, "Already in the journal: p‹U+202E›q#1")
	heraldOK(t, db, "", "register", "--stream", stream, "--id", "r\u2066", "--namespace", "webhook",
		"--url", "https://hooks.example/x", "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	for _, args := range [][]string{{"registrations"}, {"status"}, {"streams"}} {
		out := heraldOK(t, db, "", args...)
		require.NotContains(t, out, "\u202E", args)
		require.NotContains(t, out, "\u2066", args)
		require.Contains(t, out, "p‹U+202E›q", args)
	}
	require.Contains(t, heraldOK(t, db, "", "registrations"), "r‹U+2066›")
}

// A JSON Lines entry's validation error names its line, not its place in
// the batch, and a missing payload is called missing (found by a newcomer:
// "lines 1-1: invalid entries[0].payload: is not valid JSON").
func TestAFileErrorNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	file := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(file, []byte("{\"id\":\"a1\",\"kind\":\"k\",\"payload\":{}}\n\n{\"id\":\"a2\",\"kind\":\"k\"}\n"), 0o600))
	r := runCLI(t, db, "", "append", "--stream", "s", "--file", file)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, file+" line 3: invalid payload: is missing or empty: content type application/json requires a JSON value (nothing was appended)")
	require.NoFileExists(t, db, "nothing was created")

	require.NoError(t, os.WriteFile(file, []byte("{\"id\":\"a1\",\"kind\":\"\",\"payload\":{}}\n"), 0o600))
	r = runCLI(t, db, "", "append", "--stream", "s", "--file", file)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, file+" line 1: invalid kind: is empty")

	r = runCLI(t, db, "", "append", "--stream", "s", "--id", "x", "--kind", "k", "--content-type", "application/json")
	require.Equal(t, ExitUsage, r.code, r.stderr)
}

// unpark --all refuses an empty --stream or --namespace (an unset variable
// in a script), which would otherwise unpark every stream's, and unpark
// without --id says that --all exists (found by a newcomer).
func TestUnparkAllRefusesAnEmptyFilter(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	heraldOK(t, db, `{}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	for _, args := range [][]string{
		{"unpark", "--all", "--stream", ""},
		{"unpark", "--all", "--namespace", ""},
	} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "is empty; leave it out to unpark every", args)
	}
	r := runCLI(t, db, "", "unpark", "--stream", "s")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "unpark needs --id, or --all")
}

// An append that conflicts with a record of a stream whose name holds an
// override names that stream quoted, never raw (found by a newcomer).
func TestAConflictNamesAHostileStreamQuoted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	heraldOK(t, db, `{}`, "append", "--stream", "x/\u202Egnp.exe", "--id", "r1", "--kind", "k")
	r := runCLI(t, db, `{}`, "append", "--stream", "x/other", "--id", "r1", "--kind", "k")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `already exists as "x/\u202egnp.exe"#1 with a different stream`)
	require.NotContains(t, r.stderr, "\u202E")
}

// append's answer shows a long stream name whole (a table cell would cut
// it), and a --file error about a repeated id names the other line, not
// what the id itself says (found by a review).
func TestAppendAnswersWholeAndNamesLinesRight(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	long := "orders/" + strings.Repeat("a", 90)
	require.Equal(t, "Appended "+long+"#1 (id e1).\n", heraldOK(t, db, `{}`, "append", "--stream", long, "--id", "e1", "--kind", "k"))

	file := filepath.Join(dir, "dup.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(`{"id":"entries[0].x","kind":"k","payload":{}}`+"\n"+`{"id":"entries[0].x","kind":"k","payload":{}}`+"\n"), 0o600))
	r := runCLI(t, db, "", "append", "--stream", "s", "--file", file)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, file+` line 2: invalid id: "entries[0].x" repeats the id of line 1`)
}

// A --file line with more after its record object (a second record, a
// stray brace) is refused, not appended with the rest lost (found by a
// newcomer).
func TestAFileLineIsOneObject(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	for _, line := range []string{
		`{"id":"t1","kind":"k","payload":{}} {"id":"t2","kind":"k","payload":{}}`,
		`{"id":"t1","kind":"k","payload":{}}}`,
		`{"id":"t1","kind":"k","payload":{}} garbage`,
	} {
		file := filepath.Join(dir, "in.jsonl")
		require.NoError(t, os.WriteFile(file, []byte(line+"\n"), 0o600))
		r := runCLI(t, db, "", "append", "--stream", "s", "--file", file)
		require.Equal(t, ExitUsage, r.code, "%s: %s", line, r.stderr)
		require.Contains(t, r.stderr, "line 1: holds more after its record object", line)
		require.NoFileExists(t, db, "nothing was appended")
	}
}
