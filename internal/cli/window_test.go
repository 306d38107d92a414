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
