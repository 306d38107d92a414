package cli

import (
	"bytes"
	"context"
	"database/sql"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
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

// FuzzParseDatabase: --database never panics the parser; anything but
// sqlite:PATH or a postgres URL is a usage error that shows the value no
// further than where a password may start; and the database's name as
// herald prints it (errors, migrate status) holds only what the driver's own
// parser (pgconn.ParseConfig) read from the value: never its password.
func FuzzParseDatabase(f *testing.F) {
	for _, seed := range []string{"sqlite:./herald.db", "postgres://app:hunter22@db.example/herald", "postgresql://app@db/herald?sslmode=disable",
		"postgres://app@db/herald?password=hunter22", "postgres://app:pa@ss22@db/herald", "mysql://root:hunter22@db/x", "sqlite:", "", "postgres://",
		"host=db user=app password=hunter22 dbname=herald", "host=db password = 'hunter 22'", "?pAssword=000000",
		"pAssword=herald", "postgres://app:ab?Secret99@127.0.0.1:1/h", "postgres://app:ab/Secret99@127.0.0.1:1/h",
		"host=db password=ab&Secret99", `host=db password=ab\ Secret99`, "postgres:/app:Secret99@db/h",
		"postgres://u@[a?x=]:5432/db?password=Secret99", "postgres://localhost?user=bob&password=Secret99@127.0.0.1:1/h2",
		"postgres://u:xK9@Secret99?z=7@db.example.com/app", "scott/Secret99@db.example.com:5432/app",
		"postgres://u@127.0.0.1:1/db&password=Secret99", "scott/Secret99", "sqlite:postgres://u:Secret99@h/db",
		"postgres:///" + strings.Repeat("0", 64)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var shown string // herald's words about s
		d, err := parseDatabase("", s)
		if err != nil {
			if !isUsage(err) {
				t.Fatalf("parseDatabase(%q): %v is not a usage error", s, err)
			}
			shown = strings.ReplaceAll(err.Error(), databaseHint, "") // herald's own words may hold any short "password"
			if !strings.HasPrefix(s, "sqlite:") && !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
				cut := ":=@ \t\n\v\f\r"
				if !strings.HasPrefix(s, "./") && !strings.HasPrefix(s, "../") && !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/") {
					cut += "/"
				}
				if i := strings.IndexAny(s, cut); i >= 0 && strings.Contains(shown, "--database "+strings.TrimSuffix(strconv.Quote(s[:i+1]), `"`)) {
					t.Fatalf("parseDatabase(%q): the error %q shows the value past %q", s, err, s[:i+1])
				}
			}
		} else {
			if d.kind != "sqlite" && d.kind != "postgres" {
				t.Fatalf("parseDatabase(%q) = kind %q", s, d.kind)
			}
			shown = d.String()
		}
		if strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
			if err != nil && !strings.Contains(err.Error(), "(not shown: it may") && !strings.Contains(err.Error(), "cannot read a file that the URL") &&
				!regexp.MustCompile(`: the URL's (host|user|database name) is \d+ bytes, more than \d+ \(`).MatchString(err.Error()) { // a part's length only
				t.Fatalf("parseDatabase(%q): the refusal %q is not one that shows nothing of the URL", s, err)
			}
			if cfg, perr := pgconn.ParseConfig(s); err == nil && perr == nil && !readByDriver(shown, cfg) {
				t.Fatalf("parseDatabase(%q).String() = %q holds more than the driver read: user %q, host %q, database %q", s, shown, cfg.User, cfg.Host, cfg.Database)
			}
		}
	})
}

// readByDriver says whether shown, herald's name of a database, holds only
// what the driver read from the URL (cfg), so never a password: its user,
// its hosts and ports (host:port as net.JoinHostPort writes them, comma
// separated) and its database, as postgres://user@hosts/database.
func readByDriver(shown string, cfg *pgconn.Config) bool {
	rest, okUser := strings.CutPrefix(shown, "postgres://"+cfg.User+"@")
	hosts, okDB := strings.CutSuffix(rest, "/"+cfg.Database)
	if !okUser || !okDB {
		return false
	}
	read := map[string]bool{net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))): true}
	for _, f := range cfg.Fallbacks {
		read[net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port)))] = true
	}
	for _, h := range strings.Split(hosts, ",") {
		if !read[h] {
			return false
		}
	}
	return true
}

// A postgres URL is refused, without being shown, when a password's
// unencoded '@', '/', '?' or '#' would put its rest where the driver reads
// the user, the host, the database name or the query (the driver ends the
// user and password at the first '@' before any '/'), or when the driver
// cannot read it: the rest of such a password would be shown.
func TestDatabaseRefusesAPasswordReadAsAnotherPart(t *testing.T) {
	for _, s := range []string{
		"postgres://alice:Tr0ub4dor@HorseBattery@127.0.0.1:1/db",             // '@': the host would be HorseBattery@127.0.0.1
		"postgres://alice:1234/HorseBattery@127.0.0.1:1/db",                  // '/': the database would be HorseBattery@…
		"postgres://alice:Tr0ub4dor/Horse?Battery@127.0.0.1:1/db",            // '/': the port would be Tr0ub4dor
		"postgres://alice:Tr0ub4dor?Horse@127.0.0.1:1/db",                    // '?': read as the password, but a query's mark
		"postgres://alice:Tr0ub4dor@Horse?x=Battery@127.0.0.1:1/db",          // '@' and '?': the host would be Horse
		"postgres://localhost?user=alice&password=Tr0ub4dor@127.0.0.1:1/db",  // the user would be localhost?user=…
		"postgres://alice:Tr0ub4dor#Horse@127.0.0.1:1/db",                    // '#'
		"postgres://alice:Tr0ub4dor@127.0.0.1:1/db?sslmode=nonsense&x=Horse", // a URL the driver cannot read
		"postgres://alice@127.0.0.1:1/db&password=Tr0ub4dor",                 // a password typed into the database name
		"postgres://alice&password=Tr0ub4dor@127.0.0.1:1/db",                 // … or the user
		"postgres://alice@127.0.0.1:1/%1B%5B31mHorse",                        // a character that does not print
		"sqlite:postgres://alice:Tr0ub4dor@127.0.0.1:1/db",                   // a URL after sqlite:
	} {
		_, err := parseDatabase("", s)
		require.True(t, isUsage(err), "%v", err)
		require.Contains(t, err.Error(), "(not shown: it may", s)
		for _, piece := range []string{"Tr0ub4dor", "Horse", "Battery", "1234", "alice"} {
			require.NotContains(t, err.Error(), piece, s)
		}
	}
	d, err := parseDatabase("", "postgres://alice:Tr0ub4dor%40Horse%3FBattery%23@127.0.0.1:1/db?application_name=a%40b")
	require.NoError(t, err, "encoded, they are fine")
	require.Equal(t, "postgres://alice@127.0.0.1:1/db", d.String())
}

// A file the URL names that the driver cannot read is named, as the driver
// names it: the one part of its refusal shown.
func TestDatabaseNamesAFileTheDriverCannotRead(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-root.crt")
	_, err := parseDatabase("", "postgres://app:Secret99@db:5432/h?sslmode=verify-full&sslrootcert="+missing)
	require.True(t, isUsage(err), "%v", err)
	require.Contains(t, err.Error(), "the driver cannot read a file that the URL or a PG* environment variable names: open "+missing+": no such file or directory")
	require.NotContains(t, err.Error(), "Secret99")
}

// A refused value that is neither sqlite:PATH nor a postgres URL is shown up
// to its first ':', '=', '@' or space: what comes later may be a password
// (a key=value string's, another scheme's, a mistyped postgres URL's).
func TestARefusedDatabaseIsShownUpToWhereAPasswordMayStart(t *testing.T) {
	for in, shown := range map[string]string{
		"herald.db":                           `"herald.db"`,
		"host=db password=ab&Secret99":        `"host…"`,
		`host=db password='ab\' Secret99'`:    `"host…"`,
		"postgres:/app:Secret99@db/h":         `"postgres…"`,
		"app:Secret99@db:5432/h":              `"app…"`,
		"mysql://root:Secret99@db/x":          `"mysql…"`,
		" password=Secret99":                  `"…"`,
		"scott/tiger@db.example.com:5432/app": `"scott…"`,
		"scott/Secret99":                      `"scott…"`,
		"data/herald.db":                      `"data…"`,
		"./herald.db":                         `"./herald.db"`,
		"/var/lib/herald/herald.db":           `"/var/lib/herald/herald.db"`,
	} {
		_, err := parseDatabase("", in)
		require.True(t, isUsage(err), "%q: %v", in, err)
		require.Equal(t, "--database "+shown+": "+databaseHint, err.Error())
	}
}

// A postgres database is named by what the driver reads from the URL: its
// user, hosts and ports, and database; never a password, wherever the driver
// reads one (the userinfo, past a '?' in it, a query parameter, past an IPv6
// host's brackets).
func TestPostgresDatabaseIsNamedAsTheDriverReadsIt(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://app:hunter22@db:5432/herald":                            "postgres://app@db:5432/herald",
		"postgresql://app@db:5432/herald?password=hunter22&sslmode=disable": "postgres://app@db:5432/herald",
		"postgres://u@[a?x=]:5432/db?password=Secret99":                     "postgres://u@a?x=:5432/db",
		"postgres://u@[a?x=]:5432/db?sslpassword=Secret99":                  "postgres://u@a?x=:5432/db",
		"postgres://app@db:5432/h?pass%77ord=hunter22":                      "postgres://app@db:5432/h",
		"postgres://u:pw@h1:5432,h2:5433/db":                                "postgres://u@h1:5432,h2:5433/db",
		"postgres://u@[::1]:5433/db":                                        "postgres://u@[::1]:5433/db",
		"postgres://u@:5432/db?host=/var/run/postgresql":                    "postgres://u@/var/run/postgresql:5432/db",
	} {
		d, err := parseDatabase("", in)
		require.NoError(t, err, in)
		require.Equal(t, want, d.String(), in)
	}
}

// A database another build made (same schema version, other tables) is
// refused with what to do, not at its first statement.
func TestAnotherBuildsDatabaseSaysWhatToDo(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "{}", "append", "--stream", "orders/1", "--id", "o-1", "--kind", "order.created")
	sqldb, err := sql.Open("sqlite", db)
	require.NoError(t, err)
	_, err = sqldb.Exec("ALTER TABLE herald_registration DROP COLUMN rate")
	require.NoError(t, err)
	require.NoError(t, sqldb.Close())
	for _, cmd := range [][]string{{"status"}, {"registrations"}, {"migrate", "status"}, {"sweep", "--namespace", "webhook"}} {
		r := runCLI(t, db, "", cmd...)
		require.Equal(t, ExitError, r.code, "%v: %s", cmd, r.stderr)
		require.Contains(t, r.stderr, "lacks column herald_registration.rate", cmd)
		require.NotContains(t, r.stderr, "no such column", cmd)
		require.Contains(t, r.stderr, `run the build that made this database, or start a new one (README, "Upgrading")`, cmd)
	}
}
