package cli

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

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
