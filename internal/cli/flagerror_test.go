package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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
		db := filepath.Join(t.TempDir(), "herald.db")
		r := runCLI(t, db, "", c.args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		require.NotContains(t, r.stderr, "strconv", c.args)
		require.NotContains(t, r.stderr, "time: invalid", c.args)
		_, err := os.Stat(db)
		require.ErrorIs(t, err, os.ErrNotExist, "%v opened the database", c.args)
	}
}

// The worker flags that push.NewWorker refuses are usage errors in its
// words that name the flag, before sweep or run opens its database.
func TestWorkerFlagsOutOfRangeOpenNothing(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"--max-attempts", "0", "invalid --max-attempts: is 0: it must be at least 1"},
		{"--max-in-flight", "0", "invalid --max-in-flight: is 0: it must be at least 1"},
		{"--drain-page", "10001", "invalid --drain-page: is 10001: it must be from 1 to 10000"},
		{"--lease", "1s", "invalid --lease: is 1s: it must be at least 2s"},
		{"--max-retry-after", "10ms", "invalid --max-retry-after: is 10ms: it must be at least 1s"},
	} {
		for _, cmd := range [][]string{{"sweep", "--namespace", "webhook"}, {"run", "--metrics-addr", "", "--admin-addr", ""}} {
			db := filepath.Join(t.TempDir(), "herald.db")
			args := append(append([]string(nil), cmd...), c.flag, c.value)
			r := runCLI(t, db, "", args...)
			require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
			require.Contains(t, r.stderr, c.want, args)
			_, err := os.Stat(db)
			require.ErrorIs(t, err, os.ErrNotExist, "%v opened the database", args)
		}
	}
}

// register --from-seq 0 is refused (seqs are 1-based), not taken as 1.
func TestRegisterFromSeqZeroIsRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	r := runCLI(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--from-seq", "0")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--from-seq 0 must be 1 or more")
	_, err := os.Stat(db)
	require.ErrorIs(t, err, os.ErrNotExist)
}
