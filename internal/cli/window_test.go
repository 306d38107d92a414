package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// register --window is validated, naming the flag, stored, shown and kept
// by a re-register only when given again.
func TestRegisterWindow(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	args := func(extra ...string) []string {
		return append([]string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
			"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, extra...)
	}
	for _, bad := range []string{"0", "-1", "65", "many"} {
		r := runCLI(t, db, "", args("--window", bad)...)
		require.Equal(t, ExitUsage, r.code, "--window %s: %s", bad, r.stderr)
		require.Contains(t, r.stderr, "--window", bad)
		_, err := os.Stat(db)
		require.ErrorIs(t, err, os.ErrNotExist, "a refused register opened nothing")
	}

	require.Contains(t, heraldOK(t, db, "", args("--window", "16")...), "window 16")
	out := heraldOK(t, db, "", "registrations")
	require.Contains(t, out, "WINDOW")
	window := func() any {
		var regs []map[string]any
		require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
		require.Len(t, regs, 1)
		return regs[0]["window"]
	}
	require.Equal(t, 16.0, window())

	r := runCLI(t, db, "", args("--window", "65")...)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Equal(t, 16.0, window(), "a refused re-register changes nothing")

	heraldOK(t, db, "", args()...)
	require.Equal(t, 1.0, window(), "re-registering without --window: strict order again")
}

// A window above the default --max-per-host is capped by it, and register,
// registrations and status say so; one within it gets no note.
func TestWindowAboveMaxPerHostIsSaid(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	register := func(id, window string) cliRun {
		r := runCLI(t, db, "", "register", "--stream", "s", "--id", id, "--namespace", "webhook", "--url", "https://hooks.example/"+id,
			"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--window", window)
		require.Equal(t, ExitOK, r.code, r.stderr)
		return r
	}
	r := register("far", "16")
	require.Contains(t, r.stderr, "note: window 16 is above the default --max-per-host (4)")
	require.Contains(t, r.stderr, "4 of this registration's are sent at a time unless the workers run with --max-per-host 16")
	require.Empty(t, register("near", "4").stderr, "a window the cap holds gets no note")

	var answer struct{ Warnings []string }
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "register", "--stream", "s", "--id", "far", "--namespace", "webhook",
		"--url", "https://hooks.example/far", "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--window", "16", "--json")), &answer))
	require.Len(t, answer.Warnings, 1)
	require.Contains(t, answer.Warnings[0], "window 16 is above the default --max-per-host (4)")

	heraldOK(t, db, "{}", "append", "--stream", "s", "--id", "e1", "--kind", "k")
	for _, args := range [][]string{{"registrations"}, {"status"}} {
		out := heraldOK(t, db, "", args...)
		require.Contains(t, out, "16 (4 at once)", args)
		require.Contains(t, out, "a window above the default --max-per-host of herald run and sweep (4)", args)
		require.NotContains(t, out, " 4 (4 at once)", args)
	}
}
