package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/seedtest"
)

// cliRun is one run of the herald command in-process, as a user types it.
type cliRun struct {
	stdout, stderr string
	code           int
}

// runCLI runs the command on the SQLite file db (a path) with stdin.
func runCLI(t *testing.T, db, stdin string, args ...string) cliRun {
	t.Helper()
	return runIn(db, stdin, nil, args...)
}

// runEnv runs the command on db with the environment env.
func runEnv(t *testing.T, db string, env map[string]string, args ...string) cliRun {
	t.Helper()
	return runIn(db, "", env, args...)
}

// runIn runs the command on db (none when empty) with stdin and the
// environment env.
func runIn(db, stdin string, env map[string]string, args ...string) cliRun {
	var out, errb bytes.Buffer
	if db != "" {
		args = append([]string{"--database", "sqlite:" + db}, args...)
	}
	code := Main(context.Background(), args, Stdio{In: strings.NewReader(stdin), Out: &out, Err: &errb}, func(name string) string { return env[name] })
	return cliRun{stdout: out.String(), stderr: errb.String(), code: code}
}

// newDB is the path of a new SQLite file in the test's directory.
func newDB(t *testing.T) string { return filepath.Join(t.TempDir(), "herald.db") }

// requireNoDB fails unless nothing exists at db: the command created none.
func requireNoDB(t *testing.T, db string, msgAndArgs ...any) {
	t.Helper()
	_, err := os.Stat(db)
	require.ErrorIs(t, err, os.ErrNotExist, msgAndArgs...)
}

// answering is a receiver that answers every request with code.
func answering(t *testing.T, code int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
	t.Cleanup(srv.Close)
	return srv
}

// heraldOK runs a command that must exit 0.
func heraldOK(t *testing.T, db, stdin string, args ...string) string {
	t.Helper()
	r := runCLI(t, db, stdin, args...)
	require.Equal(t, ExitOK, r.code, "herald %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.stdout, r.stderr)
	return r.stdout
}

const goodSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var t0 = time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)

// hostile is a receiver's text as a host-level failure may carry it.
const hostile = seedtest.Hostile

// downHostDB: down.example:443 down with two registrations held (seedtest).
func downHostDB(t *testing.T) string { return seedtest.DownHostDB(t, t0) }

func runHostsCLI(t *testing.T, db string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	r := runCLI(t, db, "", args...)
	return r.code, r.stdout, r.stderr
}
