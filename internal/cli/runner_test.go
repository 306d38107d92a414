package cli

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
)

// A value an integer flag cannot read is a usage error (exit 2) that names
// the flag, the value and the flag's range, in herald's words rather than
// strconv's, and opens nothing; so are duration and bool flags' values.
func TestFlagValueThatIsNoNumberNamesTheFlagAndItsRange(t *testing.T) {
	reg := []string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	with := func(base []string, extra ...string) []string { return append(append([]string(nil), base...), extra...) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{with(reg, "--window", "abc"), `--window "abc" is not a whole number: it must be 1 to 64`},
		{with(reg, "--window", "1.5"), `--window "1.5" is not a whole number: it must be 1 to 64`},
		{with(reg, "--from-seq", "-1"), `--from-seq "-1" is not a whole number: it must be 1 or more`},
		{with(reg, "--window", "99999999999999999999"), `--window "99999999999999999999" is out of range (more than the largest number the flag holds): it must be 1 to 64`},
		{[]string{"skip", "--stream", "s", "--id", "r", "--to-seq", "18446744073709551616"}, `--to-seq "18446744073709551616" is out of range (more than the largest number the flag holds): it must be a seq, 1 or more`},
		{[]string{"sweep", "--namespace", "webhook", "--limit", "99999999999999999999"}, `--limit "99999999999999999999" is out of range (more than the largest number the flag holds): it must be at least 1`},
		{[]string{"sweep", "--namespace", "webhook", "--limit", "-99999999999999999999"}, `--limit "-99999999999999999999" is out of range (less than the smallest number the flag holds): it must be at least 1`},
		{[]string{"skip", "--stream", "s", "--id", "r", "--to-seq", "x"}, `--to-seq "x" is not a whole number: it must be a seq, 1 or more`},
		{[]string{"rewind", "--stream", "s", "--id", "r", "--to-seq", "x"}, `--to-seq "x" is not a whole number`},
		{[]string{"evidence", "--stream", "s", "--id", "r", "--limit", "ten"}, `--limit "ten" is not a whole number: it must be from 1 to`},
		{[]string{"records", "--stream", "s", "--limit", "ten"}, `--limit "ten" is not a whole number: it must be from 1 to`},
		{[]string{"records", "--stream", "s", "--from-seq", "first"}, `--from-seq "first" is not a whole number: it must be 1 or more`},
		{[]string{"registrations", "--limit", "all"}, `--limit "all" is not a whole number: it must be from 1 to`},
		{[]string{"prune", "--batch", "big"}, `--batch "big" is not a whole number: it must be from 1 to`},
		{[]string{"streams", "--limit", "x"}, `--limit "x" is not a whole number: it must be from 1 to 10000`},
		{[]string{"record-status", "--stream", "s", "--seq", "x"}, `--seq "x" is not a whole number: it must be a seq, 1 or more`},
		{[]string{"sweep", "--namespace", "webhook", "--limit", "x"}, `--limit "x" is not a whole number: it must be at least 1`},
		{[]string{"sweep", "--namespace", "webhook", "--max-attempts", "x"}, `--max-attempts "x" is not a whole number: it must be at least 1`},
		{[]string{"sweep", "--namespace", "webhook", "--max-in-flight", "x"}, `--max-in-flight "x" is not a whole number: it must be at least 1`},
		{[]string{"sweep", "--namespace", "webhook", "--max-per-host", "x"}, `--max-per-host "x" is not a whole number: it must be from 1 to 1024`},
		{[]string{"sweep", "--namespace", "webhook", "--drain-page", "x"}, `--drain-page "x" is not a whole number: it must be from 1 to 10000`},
		{[]string{"run", "--sweep-limit", "x"}, `--sweep-limit "x" is not a whole number: it must be at least 1`},
		{[]string{"run", "--every", "5"}, `--every "5" is not a duration: a number with a unit`},
		{[]string{"registrations", "--parked=maybe"}, `--parked "maybe" is not true or false`},
	} {
		db := newDB(t)
		r := runCLI(t, db, "", c.args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		require.NotContains(t, r.stderr, "strconv", c.args)
		require.NotContains(t, r.stderr, "time: invalid", c.args)
		requireNoDB(t, db, "%v opened the database", c.args)
	}
}

// With --json an error is a JSON object on stderr.
func TestJSONErrors(t *testing.T) {
	db := newDB(t)
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

// What names nothing, or conflicts with what is stored, is a bad value:
// exit 2, nothing changed, as for any other bad value.
func TestNotFoundAndConflictAreValueErrors(t *testing.T) {
	db := newDB(t)
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

	// A stream name is a producer's value: the not-found hint's command shows
	// its bidirectional overrides escaped; one no stream can have (a control
	// character, 201 bytes) is refused as such, naming --stream, not shown.
	for _, stream := range []string{"\x1b]0;owned\a\x1b[2J", strings.Repeat("a", 201)} {
		r := runCLI(t, db, "", "unpark", "--stream", stream, "--id", "x")
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, "herald: invalid --stream: ")
		require.NotContains(t, r.stderr, stream)
	}
	hostile := "\u202eb"
	for _, args := range [][]string{
		{"unpark", "--stream", hostile, "--id", "x"},
		{"skip", "--stream", hostile, "--id", "x", "--to-seq", "2"},
		{"rewind", "--stream", hostile, "--id", "x", "--to-seq", "1"},
		{"unregister", "--stream", hostile, "--id", "x"},
		{"evidence", "--stream", hostile, "--id", "x"},
	} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, `herald registrations --database `+shellQuote("sqlite:"+db)+` --stream $'\xe2\x80\xaeb'`, args[0])
		require.NotContains(t, r.stderr, "\u202e", args[0])
	}
}

// With --json, what register notes about the guard is in its JSON (as
// POST /v1/registrations answers it), and a sweep's log lines on stderr are
// JSON objects, one a line.
func TestJSONModeKeepsStderrAndNotesMachineReadable(t *testing.T) {
	db := newDB(t)
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

// FuzzParseInstant: --at (sweep, unpark, skip, rewind) never panics the
// parser; what it accepts is a UTC instant from 1970 to 9999 that it reads
// back the same when printed as RFC 3339, and what it refuses is a usage
// error (exit 2) that names the flag.
func FuzzParseInstant(f *testing.F) {
	for _, seed := range []string{"2026-03-15T11:00:00Z", "1773572400", "2026-03-15T12:00:00.123456789+01:00", "-5", "253402300800",
		"99999999999999999999", "0", "yesterday", "", "2026-13-01T00:00:00Z", "1e9", " 1", "+1",
		"0000-01-01T0:00:00+00:00", "1969-12-31T23:59:59Z", "2026-03-15 11:00:00Z", "2026-03-15  11:00:00Z"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		at, err := parseInstant(s)
		if err != nil {
			if !isUsage(err) || !strings.Contains(err.Error(), "--at") {
				t.Fatalf("parseInstant(%q): %v is not a usage error naming --at", s, err)
			}
			return
		}
		if at.Location() != time.UTC || at.Year() < 1970 && at.Unix() < 0 || at.Year() > 9999 {
			t.Fatalf("parseInstant(%q) = %v", s, at)
		}
		again, err := parseInstant(at.Format(time.RFC3339Nano))
		if err != nil || !again.Equal(at) {
			t.Fatalf("parseInstant(%q) = %v, which does not read back: %v, %v", s, at, again, err)
		}
	})
}

// An instant as herald's tables print it reads back as --at.
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

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 22: "22nd", 101: "101st", 111: "111th"} {
		require.Equal(t, want, ordinal(n))
	}
}
