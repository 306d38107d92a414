package cli

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Read-only commands refuse a database that is not there, naming the path and
// --database, and create nothing.
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
		{"migrate", "status"},
		{"migrate", "down", "--yes"},
	} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "no herald database at sqlite:"+db, args)
		require.Contains(t, r.stderr, "--database", args)
		require.Empty(t, r.stdout, args)
		requireNoDB(t, db, "%v created the database", args)
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
// SQLite's "unable to open database file (14)".
func TestMissingFolderIsNamed(t *testing.T) {
	db := filepath.Join(t.TempDir(), "nope", "herald.db")
	r := runCLI(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	require.Equal(t, ExitUsage, r.code, r.stderr) // a bad --database value, as a missing file is
	require.Contains(t, r.stderr, "no folder for a new herald database at sqlite:"+db+": create "+strconv.Quote(filepath.Dir(db))+" first")
	require.NoDirExists(t, filepath.Dir(db))
}

// migrate down drops data: without a terminal it needs --yes, and refuses
// with nothing changed; read-only commands after it do not migrate the file
// back up.
func TestMigrateDownNeedsYesAndStatusDoesNotUndoIt(t *testing.T) {
	db := newDB(t)
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

// A bad database URL from HERALD_DATABASE_URL is blamed on the variable, not
// on a --database the user never typed; a bad --database still names the
// flag.
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

// A --database or --file value that names the wrong thing is a bad value
// (exit 2), as a missing database file is, and nothing is created.
func TestWrongDatabaseOrFileIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.db")
	require.NoError(t, os.WriteFile(text, []byte("hello\n"), 0o600))
	r := runCLI(t, text, "", "status")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "not a herald database")

	r = runCLI(t, filepath.Join(dir, "no-such-folder", "herald.db"), "{}", "append", "--stream", "s", "--id", "a", "--kind", "k")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "no folder for a new herald database")
	require.NoDirExists(t, filepath.Join(dir, "no-such-folder"))

	db := filepath.Join(dir, "herald.db")
	r = runCLI(t, db, "", "append", "--stream", "s", "--file", filepath.Join(dir, "missing.jsonl"))
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `--file "`+filepath.Join(dir, "missing.jsonl")+`": no such file or directory`)
	require.NoFileExists(t, db)
}

// A database path and a host the operator typed are shown escaped in every
// message, hints included.
func TestTypedNamesAreShownEscaped(t *testing.T) {
	dir := t.TempDir()
	heraldOK(t, filepath.Join(dir, "h.db"), "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://h.example/", "--secret", goodSecret)
	for _, args := range [][]string{
		{"--database", "sqlite:" + filepath.Join(dir, "\x1b[31mred.db"), "status"},
		{"--database", "sqlite:" + filepath.Join(dir, "no\x1b[31mdir", "x.db"), "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://h.example/", "--secret", goodSecret},
		{"--database", "sqlite:" + filepath.Join(dir, "h.db"), "hosts", "reset", "\x1b[31mx"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) string { return "" })
		require.Equal(t, ExitUsage, code, "%q: %s", args, errb.String())
		require.NotContains(t, out.String()+errb.String(), "\x1b", "%q", args)
		require.Contains(t, errb.String(), `\x1b[31m`, "%q: the name is there, escaped", args)
	}
}

// FuzzParseDatabase: --database never panics the parser, anything but
// sqlite:PATH or a postgres URL is a usage error, and the database's name
// as herald prints it (errors, migrate status) never holds the password,
// whether in the URL's userinfo or in its password parameter.
func FuzzParseDatabase(f *testing.F) {
	for _, seed := range []string{"sqlite:./herald.db", "postgres://app:hunter22@db.example/herald", "postgresql://app@db/herald?sslmode=disable",
		"postgres://app@db/herald?password=hunter22", "postgres://app:pa@ss22@db/herald", "mysql://root:hunter22@db/x", "sqlite:", "", "postgres://",
		"host=db user=app password=hunter22 dbname=herald", "host=db password = 'hunter 22'", "?pAssword=000000",
		"pAssword=herald"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDatabase("", s)
		if err != nil {
			if !isUsage(err) {
				t.Fatalf("parseDatabase(%q): %v is not a usage error", s, err)
			}
			echoed := strings.ReplaceAll(err.Error(), databaseHint, "") // herald's own words may hold any short "password"
			for _, sec := range passwords(s) {
				if leaks(echoed, sec) {
					t.Fatalf("parseDatabase(%q): the error %q holds the password %q", s, err, sec.pw)
				}
			}
			return
		}
		if d.kind != "sqlite" && d.kind != "postgres" {
			t.Fatalf("parseDatabase(%q) = kind %q", s, d.kind)
		}
		for _, sec := range passwords(s) {
			if leaks(d.String(), sec) {
				t.Fatalf("parseDatabase(%q).String() = %q holds the password %q", s, d, sec.pw)
			}
		}
	})
}

// secret is a password a connection string carries, and the string with
// that password's place masked: what herald may show of it.
type secret struct{ pw, masked string }

// leaks says whether shown, herald's words about the --database value,
// holds the password: more often than the value with the password's place
// masked holds it, as it is or quoted (errors show it %q, and an escape
// such as \x00 can spell a password's digits). Whatever the masked value
// holds herald may show: a host named like the password, a keyword and the
// mask that spell it ("password=x" from "password=password=x"), or the
// error's closing quote after a host. An empty password cannot leak.
func leaks(shown string, sec secret) bool {
	if sec.pw == "" {
		return false
	}
	return strings.Count(shown, sec.pw) > max(strings.Count(sec.masked, sec.pw), strings.Count(strconv.Quote(sec.masked), sec.pw))
}

// passwords returns the passwords a connection string carries, in a URL's
// userinfo (as written and percent-decoded) or as a password parameter (of
// a URL's query or of a libpq keyword/value string), if they are long
// enough that finding one by chance in other text means nothing.
func passwords(s string) []secret {
	var out []secret
	mask := func(from, to int) string { return s[:from] + "xxxxx" + s[to:] }
	if _, rest, ok := strings.Cut(s, "://"); ok {
		base := len(s) - len(rest)
		authority, _, _ := strings.Cut(rest, "/")
		authority, _, _ = strings.Cut(authority, "?")
		if i := strings.LastIndexByte(authority, '@'); i >= 0 {
			if c := strings.IndexByte(authority[:i], ':'); c >= 0 {
				pw, masked := authority[c+1:i], mask(base+c+1, base+i)
				out = append(out, secret{pw, masked})
				if un, err := url.PathUnescape(pw); err == nil {
					out = append(out, secret{un, masked})
				}
			}
		}
	}
	lower := strings.Map(func(r rune) rune { // ASCII only: the same byte offsets as s
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
	if len(lower) != len(s) {
		lower = s // invalid UTF-8 was replaced: look for the lowercase word only
	}
	const space = " \t\n\v\f\r"
	for i := strings.Index(lower, "password"); i >= 0; {
		rest := strings.TrimLeft(s[i+len("password"):], space)
		if v, ok := strings.CutPrefix(rest, "="); ok {
			v = strings.TrimLeft(v, space)
			from := len(s) - len(v)
			if end := strings.IndexAny(v, space+"&;#"); end >= 0 {
				v = v[:end]
			}
			out = append(out, secret{strings.Trim(v, "'"), mask(from, from+len(v))})
		}
		next := strings.Index(lower[i+1:], "password")
		if next < 0 {
			break
		}
		i += 1 + next
	}
	long := out[:0]
	for _, sec := range out {
		if len(sec.pw) >= 6 {
			long = append(long, sec)
		}
	}
	return long
}

// A password that holds an unescaped '@' is refused before the driver reads
// its rest as the host and prints it.
func TestDatabaseRefusesAnAtInThePassword(t *testing.T) {
	_, err := parseDatabase("", "postgres://alice:Tr0ub4dor@HorseBattery@127.0.0.1:1/db")
	require.True(t, isUsage(err), "%v", err)
	require.Contains(t, err.Error(), "percent-encode it as %40")
	require.NotContains(t, err.Error(), "Tr0ub4dor")
	require.NotContains(t, err.Error(), "HorseBattery")
	d, err := parseDatabase("", "postgres://alice:Tr0ub4dor%40HorseBattery@127.0.0.1:1/db?x=a@b")
	require.NoError(t, err, "encoded, and an '@' in the query, are fine")
	require.Equal(t, "postgres://alice:xxxxx@127.0.0.1:1/db?x=a@b", d.String())
}

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://app:hunter22@db/herald":                  "postgres://app:xxxxx@db/herald",
		"postgres://app:pa@ss22@db/herald":                   "postgres://app:xxxxx@db/herald",
		"postgres://app@db/herald?sslmode=disable":           "postgres://app@db/herald?sslmode=disable",
		"postgres://app@db/herald?password=hunter22&x=1":     "postgres://app@db/herald?password=xxxxx&x=1",
		"host=db user=app password=hunter22 dbname=herald":   "host=db user=app password=xxxxx dbname=herald",
		"host=db PASSWORD = 'hunter 22' dbname=herald":       "host=db PASSWORD = xxxxx dbname=herald",
		"postgresql://app:hunter22@db:5432/h?password=other": "postgresql://app:xxxxx@db:5432/h?password=xxxxx",
		// pgx decodes a query's names: this is a password too.
		"postgres://app@db/h?pass%77ord=hunter22&sslmode=require": "postgres://app@db/h?pass%77ord=xxxxx&sslmode=require",
		"postgres://app@db/h?sslpassword=k3y":                     "postgres://app@db/h?sslpassword=xxxxx",
		// A value that holds a second parameter: both are masked.
		"password=password =hunter22":  "password=xxxxx =xxxxx",
		"password=a password=hunter22": "password=xxxxx password=xxxxx",
	} {
		if got := redactDSN(in); got != want {
			t.Errorf("redactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}
