package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
)

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"orders/1001":               "orders/1001",
		"https://remote.example/in": "https://remote.example/in",
		"a b":                       "'a b'",
		"it's":                      `'it'\''s'`,
		"":                          "''",
		"$(rm -rf /)":               "'$(rm -rf /)'",
		"\x1b]0;owned\a\x1b[2J":     `$'\x1b]0;owned\x07\x1b[2J'`, // the terminal shows the escapes, never obeys them
		"a\u202eb":                  `$'a\xe2\x80\xaeb'`,
		"it's\x1b":                  `$'it\'s\x1b'`,
		"back\\slash\t":             `$'back\\slash\x09'`,
		"not utf-8 \xff":            `$'not utf-8 \xff'`,
		"\U000e0001tag":             `$'\xf3\xa0\x80\x81tag'`,
		"café 中":                    "'café 中'",
	} {
		require.Equal(t, want, shellQuote(in), in)
	}
	// bash reads each word back as the value, in the C locale too (where
	// \u escapes do not read back); .ci/run is a bash script, so bash is
	// where the tests run.
	bash, err := exec.LookPath("bash")
	require.NoError(t, err, "bash reads the quoted words back")
	for _, in := range []string{"\x1b]0;owned\a\x1b[2J", "a\u202eb", "it's\x1b", "back\\slash\t", "not utf-8 \xff", "\U000e0001tag", "café 中", "$(rm -rf /)", "a b"} {
		for _, locale := range []string{"C", "C.UTF-8"} {
			cmd := exec.Command(bash, "-c", "printf %s "+shellQuote(in))
			cmd.Env = []string{"LC_ALL=" + locale, "PATH=/usr/bin:/bin"}
			out, err := cmd.Output()
			require.NoError(t, err, "%q", in)
			require.Equal(t, in, string(out), "%q under LC_ALL=%s: %s", in, locale, shellQuote(in))
		}
	}
	// Whatever a value holds, the word shown holds only printing characters.
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if (r > 0x3000 && r < 0xe0000 || r > 0xe0100) && r%97 != 0 {
			continue // every rune up to U+3000 and of the tags, a sample of the rest
		}
		for _, in := range []string{string(r), "a" + string(r) + "'", string([]byte{byte(r)})} {
			out := shellQuote(in)
			require.True(t, utf8.ValidString(out), "%q -> %q", in, out)
			for _, c := range out {
				require.True(t, c == ' ' || unicode.IsPrint(c), "%q -> %q holds %U", in, out, c)
			}
		}
	}
}

// A hint's command reads the database its own command read: it carries a
// --database given on the command line, runs as printed, and leaves out a
// database that HERALD_DATABASE_URL named (the variable carries over) and the
// value of one that holds a password.
func TestHintsCarryTheDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's a dir")
	require.NoError(t, os.Mkdir(dir, 0o755))
	db := filepath.Join(dir, "hints.db")
	for i, id := range []string{"r1", "r2"} {
		heraldOK(t, db, "", "register", "--stream", "s/1", "--id", id, "--namespace", "webhook", "--url", fmt.Sprint("https://hooks.example/", i), "--secret", goodSecret)
	}
	// asPrinted runs hint, the command a hint printed, as a shell would
	// read it.
	asPrinted := func(hint string) string {
		t.Helper()
		line, ok := strings.CutPrefix(strings.TrimSpace(hint), "herald ")
		require.True(t, ok, hint)
		argv, err := exec.Command("sh", "-c", `printf '%s\0' `+line).Output()
		require.NoError(t, err, line)
		return heraldOK(t, "", "", strings.Split(strings.TrimSuffix(string(argv), "\x00"), "\x00")...)
	}
	out := heraldOK(t, db, "", "registrations", "--limit", "1")
	_, hint, ok := strings.Cut(out, "More registrations follow: ")
	require.True(t, ok, out)
	require.True(t, strings.HasPrefix(hint, "herald registrations --database "+shellQuote("sqlite:"+db)+" "), hint)
	next := asPrinted(hint) // nothing added
	require.Contains(t, next, " r2 ")
	require.NotContains(t, next, " r1 ")
	for _, id := range []string{"e1", "e2", "e3"} {
		heraldOK(t, db, "{}", "append", "--stream", "s/1", "--id", id, "--kind", "k")
	}
	// The records hint keeps a --limit given.
	out = heraldOK(t, db, "", "records", "--stream", "s/1", "--limit", "1")
	_, hint, ok = strings.Cut(out, "More records up to #3: ")
	require.True(t, ok, out)
	require.Equal(t, "herald records --database "+shellQuote("sqlite:"+db)+" --stream s/1 --from-seq 2 --limit 1\n", hint)
	next = asPrinted(hint)
	require.Contains(t, next, " e2 ")
	require.NotContains(t, next, " e3 ")
	require.Contains(t, next, "More records up to #3: ")
	// evidence --limit says when older rows are kept.
	heraldOK(t, db, "", "skip", "--stream", "s/1", "--id", "r1", "--to-seq", "2")
	heraldOK(t, db, "", "rewind", "--stream", "s/1", "--id", "r1", "--to-seq", "1")
	heraldOK(t, db, "", "skip", "--stream", "s/1", "--id", "r1", "--to-seq", "3")
	out = heraldOK(t, db, "", "evidence", "--stream", "s/1", "--id", "r1", "--limit", "2")
	require.Equal(t, 1, strings.Count(out, "  rewind  "), out)
	_, hint, ok = strings.Cut(out, "Older evidence is kept: ")
	require.True(t, ok, out)
	hint, ok = strings.CutSuffix(hint, " shows up to the 100 kept.\n")
	require.True(t, ok, hint)
	next = asPrinted(hint)
	require.Equal(t, 2, strings.Count(next, "  skip  "), next)
	require.NotContains(t, next, "Older evidence")
	require.NotContains(t, heraldOK(t, db, "", "evidence", "--stream", "s/1", "--id", "r1", "--limit", "3"), "Older evidence", "exactly --limit, none older")

	// Unregister's way back, its secret filled in, registers it as it was.
	heraldOK(t, db, "", "register", "--stream", "s/2", "--id", "w", "--namespace", "webhook", "--url", "https://hooks.example/in",
		"--secret", goodSecret, "--kinds", "order.*,invoice.paid", "--window", "4", "--on-4xx", "skip")
	was := heraldOK(t, db, "", "registrations", "--stream", "s/2", "--json")
	out = heraldOK(t, db, "", "unregister", "--stream", "s/2", "--id", "w")
	_, hint, ok = strings.Cut(out, "To bring it back there: ")
	require.True(t, ok, out)
	hint, ok = strings.CutSuffix(hint, ", with its --secret, --envelope as registered\n")
	require.True(t, ok, hint)
	asPrinted(hint + " --secret " + goodSecret)
	require.Equal(t, was, heraldOK(t, db, "", "registrations", "--stream", "s/2", "--json"))

	r := runCLI(t, db, "", "record-status", "--id", "nope")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "herald streams --database "+shellQuote("sqlite:"+db)+" shows what each stream retains")

	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"registrations", "--limit", "1"}, Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr},
		func(k string) string {
			if k == "HERALD_DATABASE_URL" {
				return "sqlite:" + db
			}
			return ""
		})
	require.Equal(t, ExitOK, code, stderr.String())
	require.Contains(t, stdout.String(), "More registrations follow: herald registrations --limit 1 --after-stream s/1 --after-id r1\n")

	for given, want := range map[string]string{
		"postgres://app:hunter22@db.example/herald":        "herald records --database …",
		"postgres://app@db.example/herald?password=x1":     "herald records --database …",
		"postgres://app@db.example/herald?sslmode=disable": "herald records --database 'postgres://app@db.example/herald?sslmode=disable'",
		"sqlite:./my db.sqlite":                            "herald records --database 'sqlite:./my db.sqlite'",
		"postgres://app@[a?password=x]:1/herald":           "herald records --database …", // a host the driver reads past its '?'
		"postgres://app:%3A@db.example/herald":             "herald records --database …",
	} {
		e := &env{database: given, databaseGiven: true}
		require.Equal(t, want, e.hint("records"), given)
	}
	// The hint of a database whose schema is behind.
	e := &env{database: "postgres://app:hunter22@db.example/herald", databaseGiven: true}
	d, err := parseDatabase("", e.database)
	require.NoError(t, err)
	msg := e.openError(d, store.ErrSchemaBehind).Error()
	require.Contains(t, msg, "with this database: herald migrate up --database …")
	require.NotContains(t, msg, "hunter22")
	// Without --database the error's own words give the command, once.
	e = &env{database: defaultDatabase}
	d, err = parseDatabase("", e.database)
	require.NoError(t, err)
	msg = e.openError(d, fmt.Errorf("sqlite: open herald.db: %w", store.ErrSchemaBehind)).Error()
	require.Equal(t, 1, strings.Count(msg, "herald migrate up"), msg)
}

// The pointer to --help follows a command line of the wrong shape only, and
// names the command whose help answers it: a value herald does not take is
// named by its message, which says what to give. Both exit 2.
func TestHelpHintFollowsOnlyACommandLineOfTheWrongShape(t *testing.T) {
	db := newDB(t)
	lines := filepath.Join(t.TempDir(), "records.jsonl")
	require.NoError(t, os.WriteFile(lines, []byte(`{"id":"a","kind":"k","payload":{}}`+"\n"+`{"id":"b","kind":5}`+"\n"), 0o600))
	for _, c := range []struct {
		args []string
		hint string // "": none
	}{
		{[]string{"append", "--stream", "s", "--kindd", "k"}, "Run 'herald append --help' for usage."},                            // no such flag
		{[]string{"apend", "--stream", "s"}, "Run 'herald --help' for usage."},                                                    // no such command
		{[]string{"append", "--stream"}, "Run 'herald append --help' for usage."},                                                 // a flag without its value
		{[]string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook"}, "Run 'herald register --help' for usage."}, // --url missing
		{[]string{"status", "extra"}, "Run 'herald status --help' for usage."},
		{[]string{"hosts", "reset", "a", "b"}, "Run 'herald hosts reset --help' for usage."},                            // two arguments where one is taken
		{[]string{"hosts", "reset", ""}, ""},                                                                            // an empty HOST                                                    // an argument where there are none
		{[]string{"registrations", "--limit", "many"}, ""},                                                              // a value of the wrong type
		{[]string{"append", "--stream", "s", "--file", lines}, ""},                                                      // line 2's kind
		{[]string{"append", "--stream", "s", "--id", "x", "--kind", ""}, ""},                                            // an empty --kind
		{[]string{"register", "--stream", "s", "--id", "r", "--namespace", "smoke", "--url", "https://h.example/"}, ""}, // no such namespace
	} {
		r := runCLI(t, db, "{}", c.args...)
		require.Equal(t, ExitUsage, r.code, "%q: %s", c.args, r.stderr)
		if c.hint == "" {
			require.NotContains(t, r.stderr, "--help", "%q", c.args)
		} else {
			require.True(t, strings.HasSuffix(r.stderr, "\n"+c.hint+"\n"), "%q: %s", c.args, r.stderr)
		}
	}
	for _, json := range []string{"--json", "--json=true", "--json=1"} {
		r := runCLI(t, db, "", "status", "--nosuch", json)
		require.Equal(t, ExitUsage, r.code)
		require.JSONEq(t, `{"error": "unknown flag: --nosuch"}`, r.stderr, "%s: errors as JSON, no hint", json)
	}
	r := runCLI(t, db, "", "append", "--stream", "s", "--file", lines)
	require.Contains(t, r.stderr, "line 2: invalid kind")
	require.NoFileExists(t, db, "nothing was appended, and no database made")
}

// A flag or command herald does not have is answered, on one line, with the
// nearest one it has (a flag the command's own or an inherited one), when
// one is a typo away, or the same file's flag with or without "-file".
func TestAMistypedFlagOrCommandGetsTheNearestOne(t *testing.T) {
	db := newDB(t)
	for args, want := range map[string]string{
		"registraions":                      "unknown command \"registraions\" for \"herald\"; did you mean registrations?\n",
		"frobnicate":                        "unknown command \"frobnicate\" for \"herald\"\n",
		"append --strem s":                  "unknown flag: --strem; did you mean --stream?\n",
		"sweep --namspace webhook":          "unknown flag: --namspace; did you mean --namespace?\n",
		"status --datbase x":                "unknown flag: --datbase; did you mean --database?\n",
		"status --zzzzzzz":                  "unknown flag: --zzzzzzz\n",
		"keys add --private-key-file k.pem": "unknown flag: --private-key-file; did you mean --private-key?\n",
		"register --private-key k.pem":      "unknown flag: --private-key; did you mean --private-key-file?\n",
	} {
		r := runCLI(t, db, "", strings.Fields(args)...)
		require.Equal(t, ExitUsage, r.code, args)
		require.Contains(t, r.stderr, "herald: "+want, args)
	}
}

// README: "Every command has --help with examples". Each example shows the
// command itself, so that an example copied from one command's help runs it.
func TestEveryCommandsHelpHasExamplesOfIt(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			require.NotEmpty(t, sub.Example, "%s --help has no examples", sub.CommandPath())
			require.Regexp(t, `(^|\s)`+regexp.QuoteMeta(sub.CommandPath())+`(\s|$)`, sub.Example, "%s --help's examples do not show it", sub.CommandPath())
			n++
			walk(sub)
		}
	}
	walk(newRoot(&env{getenv: func(string) string { return "" }}))
	require.Greater(t, n, 30, "the walk found the commands")
}

// A command line without the flags a command needs names every one missing,
// not the first alone.
func TestAMissingFlagsErrorNamesThemAll(t *testing.T) {
	r := runCLI(t, newDB(t), "", "register", "--stream", "s")
	require.Equal(t, ExitUsage, r.code)
	require.Equal(t, "herald: register needs --id, --namespace and --url\nRun 'herald register --help' for usage.\n", r.stderr)
	r = runCLI(t, newDB(t), "", "records")
	require.Equal(t, "herald: records needs --stream\nRun 'herald records --help' for usage.\n", r.stderr)
}

// Every refusal that shows a value the user gave (a flag's, an argument, a
// path, a --database) shows it through journal.Shown or journal.Quoted: cut
// past 256 bytes, saying its length. 100 KB values were printed whole.
func TestRefusalsCutLongValues(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x", "--secret", goodSecret)
	long := strings.Repeat("a", 100_000)
	path := filepath.Join(t.TempDir(), long)
	sqlite := []string{"--database", "sqlite:" + db}
	for _, args := range [][]string{
		{"registrations", "--namespace", long},
		{"run", "--namespaces", long},
		{"registrations", "--limit", long},
		{"registrations", "--limit", strings.Repeat("0", 100_000) + "5000000000000000000000"},
		{"sweep", "--namespace", "webhook", "--at", long},
		{"sweep", "--namespace", "webhook", "--at", strings.Repeat("0", 100_000) + "99999999999999"},
		{"register", "--stream-prefix", "p/", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x", "--secret", goodSecret, "--from", long},
		{"append", "--stream", "s", "--file", path},
		{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x", "--secret", goodSecret, "--client-cert", path, "--client-key", path},
		{"keys", "add", "--key-id", "https://example.com/a#k", "--private-key", path},
		{"pause", "--stream", long, "--id", "r"},
		{"unpark", "--stream", "s", "--id", long},
		{"unregister", "--stream", long, "--id", "r"},
		{"keys", "remove", "--key-id", long},
		{"tokens", "revoke", long},
		{"keyring", "retire", long, "--keyring-file", db + ".keyring"},
		{"--keyring-file", path, "registrations"},
		{"registrations", long},
		{long},
		{"registrations", "--" + long},
		{"registrations", "-x" + long},
		{"run", "--admin-addr", long, "--metrics-addr", ""},
		{"run", "--admin-addr", long + ":80", "--metrics-addr", ""},
		{"run", "--metrics-addr", long + ":80", "--admin-addr", ""},
	} {
		r := runCLI(t, "", "", append(sqlite, args...)...)
		require.NotEqual(t, ExitOK, r.code, "%.80v", args)
		require.Less(t, len(r.stderr), 1500, "%.80v: %.2000s", args, r.stderr)
		require.Regexp(t, `10\d{4}`, r.stderr, "%.80v: the length is said", args)
	}
	for _, database := range []string{"sqlite:" + path, "postgres://" + long, "postgres://u@h/" + long, "postgres://" + long + "@h/d", long} {
		r := runCLI(t, "", "", "--database", database, "registrations")
		require.Equal(t, ExitUsage, r.code, "%.80s", database)
		require.Less(t, len(r.stderr), 1500, "%.80s: %.2000s", database, r.stderr)
	}
}

// help and completion, cobra's own, refuse a topic or shell they do not
// know as every command refuses a bad argument: exit 2, in JSON with
// --json (they printed help and exited 0); what they know still works.
func TestHelpAndCompletionRefuseWhatTheyDoNotKnow(t *testing.T) {
	for _, args := range [][]string{{"completion", "nosh"}, {"completion"}, {"help", "nosuch"}} {
		r := runCLI(t, "", "", append([]string{"--json"}, args...)...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		var e struct{ Error string }
		require.NoError(t, json.Unmarshal([]byte(r.stderr), &e), "%v: %s", args, r.stderr)
		require.NotEmpty(t, e.Error)
		require.Empty(t, r.stdout, args)
	}
	require.Contains(t, heraldOK(t, "", "", "completion", "bash"), "bash completion")
	require.Contains(t, heraldOK(t, "", "", "help", "keys"), "held once")
}

// prune and run say alike what --retain's values mean, 0s above all (not
// "off": nothing kept once done with), and a value out of range is refused
// naming the range.
func TestRetainSaysWhatZeroMeans(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	for _, cmd := range []string{"prune", "run"} {
		r := runCLI(t, db, "", cmd, "--help")
		require.Equal(t, ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, retainHelp, cmd)
	}
	r := runCLI(t, db, "", "prune", "--retain", "-1s")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `invalid --retain: "-1s" is out of range: it must be 0s to 3650d`)
}
