package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/store"
	"github.com/stretchr/testify/require"
)

const goodSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// register's config errors name the flag that was given, not the stored
// config's key, and the flag's position when it repeats; nothing is stored.
func TestRegisterConfigErrorsNameTheFlag(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	r := runCLI(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook",
		"--url", "https://hooks.example/x", "--secret", "bogus", "--secret", goodSecret, "--secret", goodSecret)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `invalid --secret (the 1st): does not start with "whsec_"`)
	require.Contains(t, r.stderr, "invalid --secret (the 3rd): repeats the 2nd")
	require.NotContains(t, r.stderr, "config.")
	require.NotContains(t, r.stderr, "bogus", "a secret is never repeated")

	r = runCLI(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "cloudevents", "--url", "https://hooks.example/x")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "invalid --source: is missing")
	require.NoFileExists(t, db, "a refused register opens no database")
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 22: "22nd", 101: "101st", 111: "111th"} {
		require.Equal(t, want, ordinal(n))
	}
}

// What names nothing, or conflicts with what is stored, is a bad value:
// exit 2, nothing changed, as for any other bad value.
func TestNotFoundAndConflictAreValueErrors(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	r := runCLI(t, db, `{"a":2}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "already exists as s#1 with a different payload")
	heraldOK(t, db, `{"end":true}`, "append", "--stream", "s", "--id", "e2", "--kind", "k", "--final")
	r = runCLI(t, db, `{"a":3}`, "append", "--stream", "s", "--id", "e3", "--kind", "k")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "sealed")
	require.NotContains(t, heraldOK(t, db, "", "records", "--stream", "s"), "e3")

	for _, args := range [][]string{
		{"unpark", "--stream", "s", "--id", "nope"},
		{"skip", "--stream", "s", "--id", "nope", "--to-seq", "2"},
		{"unregister", "--stream", "s", "--id", "nope"},
		{"hosts", "reset", "unknown.example:443"},
	} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "not found", args)
	}

	// A stream name is a producer's value: the not-found hint's command
	// shows its escapes and bidirectional overrides escaped (found by a
	// newcomer: it wrote them raw and the terminal obeyed them).
	hostile := "\x1b]0;owned\a\x1b[2J\u202eb"
	for _, args := range [][]string{
		{"unpark", "--stream", hostile, "--id", "x"},
		{"skip", "--stream", hostile, "--id", "x", "--to-seq", "2"},
		{"rewind", "--stream", hostile, "--id", "x", "--to-seq", "1"},
		{"unregister", "--stream", hostile, "--id", "x"},
		{"evidence", "--stream", hostile, "--id", "x"},
	} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, `herald registrations --database `+shellQuote("sqlite:"+db)+` --stream $'\x1b]0;owned\x07\x1b[2J\xe2\x80\xaeb'`, args[0])
		require.NotContains(t, r.stderr, "\x1b", args[0])
		require.NotContains(t, r.stderr, "\u202e", args[0])
	}
}

// With --json, what register notes about the guard is in its JSON (as
// POST /v1/registrations answers it), and a sweep's log lines on stderr are
// JSON objects, one a line.
func TestJSONModeKeepsStderrAndNotesMachineReadable(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	r := runCLI(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook",
		"--url", "http://192.0.2.1/x", "--secret", goodSecret, "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Empty(t, r.stderr)
	var reg struct {
		ID       string   `json:"id"`
		Warnings []string `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &reg))
	require.Equal(t, "r", reg.ID)
	require.Len(t, reg.Warnings, 2, reg.Warnings)
	require.Contains(t, reg.Warnings[0], "--allow-http")
	require.Contains(t, reg.Warnings[1], "TEST-NET-1")
	require.Contains(t, reg.Warnings[1], "no option lifts it", "a range without an opt-in says so")

	heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	r = runCLI(t, db, "", "sweep", "--namespace", "webhook", "--at", "2026-03-15T12:00:00Z", "--json")
	require.Equal(t, ExitAttention, r.code, r.stderr)
	lines := 0
	sc := bufio.NewScanner(strings.NewReader(r.stderr))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "stderr line %q", sc.Text())
		lines++
		if strings.Contains(line["msg"].(string), "parked") {
			require.Equal(t, "s", line["stream"])
		}
	}
	require.Positive(t, lines, "the sweep parked the registration and logged it")
}

// A sweep that leaves records behind a cursor (a turn gave its slot up to
// a waiting claim) exits 3, as a saturated one does: a scheduler running
// one sweep at a time must know to sweep again soon (found by a newcomer).
func TestSweepWithABacklogNeedsAttention(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	db := filepath.Join(t.TempDir(), "herald.db")
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

// rewind moves a cursor back, never forward; skip's --reason is refused
// when the evidence would cut it or hide a control character; an update of
// a registration says so; the command printed to bring a registration back
// is safe to paste whatever its stream and id hold.
func TestOperatorMovesSayWhatTheyDo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	for i := range 5 {
		heraldOK(t, db, "{}", "append", "--stream", "a&id=b", "--id", fmt.Sprint("e", i), "--kind", "k")
	}
	out := heraldOK(t, db, "", "register", "--stream", "a&id=b", "--id", "x#y", "--namespace", "webhook", "--url", "https://hooks.example/x", "--secret", goodSecret)
	require.Contains(t, out, "Registered stream=a&id=b id=x#y")
	out = heraldOK(t, db, "", "register", "--stream", "a&id=b", "--id", "x#y", "--namespace", "cloudevents", "--url", "https://other.example/ce", "--source", "/x")
	require.Contains(t, out, "Updated stream=a&id=b id=x#y: cloudevents to other.example:443")
	require.Contains(t, out, "It replaced webhook to https://hooks.example/x;")
	// An update keeps the cursor: --from-seq says it did nothing (found by
	// a newcomer: it was silently ignored).
	out = heraldOK(t, db, "", "register", "--stream", "a&id=b", "--id", "x#y", "--namespace", "cloudevents", "--url", "https://other.example/ce", "--source", "/x", "--from-seq", "4")
	require.Contains(t, out, "cursor 1, 5 records to deliver")
	require.Contains(t, out, "--from-seq 4 applies to a new registration only: the cursor stays at 1")
	out = heraldOK(t, db, "", "register", "--stream", "a&id=b", "--id", "x#y", "--namespace", "cloudevents", "--url", "https://other.example/ce", "--source", "/x", "--from-seq", "4", "--json")
	require.Contains(t, out, `"--from-seq 4 applies to a new registration only: the cursor stays at 1 (herald skip or rewind moves it)"`)

	r := runCLI(t, db, "", "rewind", "--stream", "a&id=b", "--id", "x#y", "--to-seq", "3")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "a rewind moves the cursor back")
	require.Contains(t, r.stderr, "skip")

	heraldOK(t, db, "", "skip", "--stream", "a&id=b", "--id", "x#y", "--to-seq", "4", "--reason", "bad records")
	heraldOK(t, db, "", "rewind", "--stream", "a&id=b", "--id", "x#y", "--to-seq", "2")
	require.Contains(t, heraldOK(t, db, "", "evidence", "--stream", "a&id=b", "--id", "x#y"), "rewound from #4 to #2")

	for reason, says := range map[string]string{
		strings.Repeat("r", 2049): "invalid --reason: is longer than 2048 bytes (2049)",
		"bad\x1b[31mred":          "invalid --reason: has a control character U+001B at byte 3",
		"":                        "invalid --reason: is empty",
	} {
		r := runCLI(t, db, "", "skip", "--stream", "a&id=b", "--id", "x#y", "--to-seq", "3", "--reason", reason)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, says)
	}

	out = heraldOK(t, db, "", "unregister", "--stream", "a&id=b", "--id", "x#y")
	require.Contains(t, out, "herald register --database "+shellQuote("sqlite:"+db)+" --stream 'a&id=b' --id 'x#y' --namespace cloudevents --url https://other.example/ce --on-4xx retry --from-seq 2, with its --source, --structured, --token as registered\n")
}

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

// Every key of a namespace's config is a flag of register, so that build
// refuses it for the other namespaces and asFlags names it.
func TestNamespaceFlagsAreRegisterFlags(t *testing.T) {
	register := newRegister(&env{})
	for ns, w := range namespaces {
		require.NotEmpty(t, w.flags(), ns)
		for _, f := range w.flags() {
			require.NotNil(t, register.Flags().Lookup(f), "%s's --%s", ns, f)
		}
	}
}

// An instant as herald's tables print it reads back as --at (found by a
// newcomer: the tables' "2026-03-15 11:00:00Z" was refused).
func TestTablesInstantsPasteIntoAt(t *testing.T) {
	want := time.Date(2026, 3, 15, 11, 0, 1, 0, time.UTC)
	got, err := parseInstant(operator.Instant(want))
	require.NoError(t, err)
	require.True(t, got.Equal(want), "%v", got)
	for _, bad := range []string{"2026-03-15  11:00:00Z", "2026-03-15 ", "2026-03-15 11:00:00"} {
		_, err := parseInstant(bad)
		require.Error(t, err, bad)
		require.True(t, isUsage(err), bad)
	}
}

// A --database or --file value that names the wrong thing is a bad value
// (exit 2), as a missing database file is, and nothing is created (found by
// a newcomer: these exited 1).
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

// registrations --limit says when more follow, with the command that lists
// them (found by a newcomer: the list was cut silently).
func TestRegistrationsSaysWhenMoreFollow(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	for i, id := range []string{"r1", "r2", "r 3"} { // listed by id: "r 3", r1, r2
		heraldOK(t, db, "", "register", "--stream", "s/1", "--id", id, "--namespace", "webhook", "--url", fmt.Sprint("https://hooks.example/", i), "--secret", goodSecret)
	}
	out := heraldOK(t, db, "", "registrations", "--stream", "s/1", "--limit", "2")
	again := "herald registrations --database " + shellQuote("sqlite:"+db)
	require.Contains(t, out, "More registrations follow: "+again+" --stream s/1 --limit 2 --after-stream s/1 --after-id r1\n")
	require.Contains(t, out, "r 3")
	require.NotContains(t, out, "r2")
	out = heraldOK(t, db, "", "registrations", "--stream", "s/1", "--limit", "2", "--after-stream", "s/1", "--after-id", "r1")
	require.Contains(t, out, "r2")
	require.NotContains(t, out, "r1", "the page begins after --after-id")
	require.NotContains(t, out, "r 3")
	require.NotContains(t, out, "More registrations follow", "the last page says nothing more")
	// The printed command carries the filters and quotes what needs it.
	heraldOK(t, db, "{}", "append", "--stream", "s/1", "--id", "e1", "--kind", "k")
	out = heraldOK(t, db, "", "registrations", "--stream", "s/1", "--lagging", "--limit", "1")
	require.Contains(t, out, "More registrations follow: "+again+" --stream s/1 --lagging --limit 1 --after-stream s/1 --after-id 'r 3'\n")
	require.NotContains(t, heraldOK(t, db, "", "registrations", "--limit", "3"), "More registrations follow", "exactly --limit, none after")
	r := runCLI(t, db, "", "registrations", "--after-stream", "s/1")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--after-stream and --after-id go together")
	// A --stream no stream can have is refused, as records refuses it, not
	// answered with an empty list.
	r = runCLI(t, db, "", "registrations", "--stream", "\x1b[31m")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "invalid --stream: has a control character U+001B at byte 0")
	require.NotContains(t, r.stderr, "\x1b")
}

// record-status tells a cursor moved past a record from one the receiver
// acknowledged (found by a newcomer: a skipped record said "yes").
func TestRecordStatusTellsSkippedFromAcknowledged(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer ok.Close()
	refuses := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnprocessableEntity) }))
	defer refuses.Close()
	db := filepath.Join(t.TempDir(), "herald.db")
	for i := range 3 {
		heraldOK(t, db, "{}", "append", "--stream", "s", "--id", fmt.Sprint("e", i), "--kind", "order.created")
	}
	reg := func(id, url string, more ...string) {
		heraldOK(t, db, "", append([]string{"register", "--stream", "s", "--id", id, "--namespace", "webhook", "--url", url, "--secret", goodSecret}, more...)...)
	}
	reg("acker", ok.URL+"/a")
	reg("pattern", ok.URL+"/p", "--kinds", "order.*")
	reg("picky", ok.URL+"/k", "--kinds", "order.paid")
	reg("rejected", refuses.URL+"/r", "--on-4xx", "skip")
	reg("skipper", "https://192.0.2.10/s")
	heraldOK(t, db, "", "skip", "--stream", "s", "--id", "skipper", "--to-seq", "3", "--reason", "poison")
	r := runCLI(t, db, "", "sweep", "--namespace", "webhook", "--at", "2026-03-15T11:00:00Z", "--allow-http", "--allow-private-network")
	require.Contains(t, []int{ExitOK, ExitAttention}, r.code, r.stderr)

	out := heraldOK(t, db, "", "record-status", "--stream", "s", "--seq", "2")
	for id, said := range map[string]string{"acker": "yes", "pattern": "yes", "picky": "not its kind", "rejected": "skipped", "skipper": "yes or skipped"} {
		require.Regexp(t, `(?m)^`+id+` +webhook +\S+ +`+said+` +[0-9]+ `, out, id)
	}
	require.Contains(t, out, "Past the cursor of 5 (acknowledged by 2, moved past by the others), not yet of 0.")
	require.Contains(t, out, `"yes": acknowledged (a 2xx)`)
}

// unpark --all resumes every parked registration the filters match, each
// with its evidence (found by a newcomer: one unpark per registration was
// the only way back after a misconfiguration parked many).
func TestUnparkAll(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	heraldOK(t, db, "{}", "append", "--stream", "s", "--id", "e1", "--kind", "k")
	heraldOK(t, db, "{}", "append", "--stream", "t", "--id", "e2", "--kind", "k")
	// 192.0.2.0/24 is refused by the network guard: the sweep parks them.
	for _, r := range []struct{ stream, id string }{{"s", "a"}, {"s", "b"}, {"t", "c"}} {
		heraldOK(t, db, "", "register", "--stream", r.stream, "--id", r.id, "--namespace", "webhook", "--url", "https://192.0.2.10/"+r.id, "--secret", goodSecret)
	}
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "ce", "--namespace", "cloudevents", "--url", "https://192.0.2.10/ce", "--source", "/x")
	for _, ns := range []string{"webhook", "cloudevents"} {
		r := runCLI(t, db, "", "sweep", "--namespace", ns, "--at", "2026-03-15T11:00:00Z")
		require.Equal(t, ExitAttention, r.code, r.stderr)
	}
	parkedNow := func() []string {
		var regs []operator.RegistrationView
		require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--parked", "--json")), &regs))
		var ids []string
		for _, r := range regs {
			ids = append(ids, r.Stream+" "+r.ID)
		}
		return ids
	}
	require.Equal(t, []string{"s a", "s b", "s ce", "t c"}, parkedNow(), "all four parked")

	out := heraldOK(t, db, "", "unpark", "--all", "--stream", "s", "--namespace", "webhook", "--at", "2026-03-15T11:05:00Z")
	require.Contains(t, out, "Unparked stream=s id=a: cursor 1 (1 record to deliver).\n")
	require.Contains(t, out, "Unparked stream=s id=b: cursor 1 (1 record to deliver).\n")
	require.Contains(t, out, "2 registrations unparked, due now.\n")
	require.Equal(t, []string{"s ce", "t c"}, parkedNow(), "only webhook's of stream s were unparked")
	require.Contains(t, heraldOK(t, db, "", "evidence", "--stream", "s", "--id", "a"), "unparked")

	var all struct {
		Unparked []operator.RegistrationView `json:"unparked"`
	}
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "unpark", "--all", "--json")), &all))
	require.Len(t, all.Unparked, 2, "c and ce, the rest")
	require.Equal(t, "No parked registration matched; nothing changed.\n", heraldOK(t, db, "", "unpark", "--all"))

	for args, says := range map[string]string{
		"--all --id a":                          "unpark takes --id or --all, not both",
		"--stream s --id a --namespace webhook": "--namespace applies to unpark --all",
		"--all --namespace nope":                "nope",
	} {
		r := runCLI(t, db, "", append([]string{"unpark"}, strings.Fields(args)...)...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, says, args)
	}
}

// A single append's bad value is named by the flag (or stdin) it came by,
// not the library's entries[0].field (found by a newcomer).
func TestOneAppendNamesTheFlag(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	for stdin, c := range map[string]struct {
		args []string
		says string
	}{
		"not json": {[]string{"--kind", "k"}, "invalid payload (stdin): is not valid JSON"},
		"{}":       {[]string{"--kind", "a b"}, "invalid --kind: has whitespace U+0020 at byte 1"},
	} {
		r := runCLI(t, db, stdin, append([]string{"append", "--stream", "s", "--id", "e1"}, c.args...)...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, c.says)
		require.NotContains(t, r.stderr, "entries[0]")
	}
	require.NoFileExists(t, db, "nothing was appended, no database made")
}

// A hint's command reads the database its own command read: it carries a
// --database given on the command line, runs as printed, and leaves out a
// database that HERALD_DATABASE_URL named (the variable carries over) and
// the value of one that holds a password (found by a review: a hint run
// as printed read ./herald.db, or failed, instead of the database listed).
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
		"postgres://app:hunter22@db.example/herald":     "herald records --database …",
		"postgres://app@db.example/herald?password=x1":  "herald records --database …",
		"postgres://app@db.example/herald?sslmode=none": "herald records --database 'postgres://app@db.example/herald?sslmode=none'",
		"sqlite:./my db.sqlite":                         "herald records --database 'sqlite:./my db.sqlite'",
	} {
		e := &env{database: given, databaseGiven: true}
		require.Equal(t, want, e.hint("records"), given)
	}
	// The hint of a database whose schema is behind.
	e := &env{database: "postgres://app:hunter22@db.example/herald", databaseGiven: true}
	d, err := parseDatabase("", e.database)
	require.NoError(t, err)
	msg := e.openError(d, store.ErrSchemaBehind).Error()
	require.Contains(t, msg, "run: herald migrate up --database …")
	require.NotContains(t, msg, "hunter22")
}

// A database path and a host the operator typed are shown escaped in every
// message, hints included (found by a newcomer: an escape in the path or the
// host reached the terminal raw).
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
