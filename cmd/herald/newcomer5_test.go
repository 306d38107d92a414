package main_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A command that reads or delivers refuses a SQLite path with no file,
// naming it and --database, exits 2 and creates nothing: a mistyped path
// must not serve a new, empty database. register, append and migrate up
// create one.
func TestOnlyCreatingCommandsCreateASQLiteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "typo.db")
	h := newHerald(t, "sqlite:"+path)
	for _, args := range [][]string{
		{"sweep", "--namespace", "webhook"},
		{"run", "--metrics-addr", "", "--admin-addr", ""},
		{"status"},
		{"registrations", "--parked"},
		{"records", "--stream", "s"},
		{"evidence", "--stream", "s", "--id", "r"},
		{"record-status", "--stream", "s", "--seq", "1"},
		{"hosts"},
		{"streams"},
		{"prune"},
		{"skip", "--stream", "s", "--id", "r", "--to-seq", "2"},
		{"unregister", "--stream", "s", "--id", "r"},
	} {
		r := h.run("", args...)
		require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "no herald database at sqlite:"+path, args)
		require.Contains(t, r.stderr, "--database", args)
		require.Empty(t, r.stdout, args)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries, "%v created a file", args)
	}

	for i, args := range [][]string{
		{"migrate", "up"},
		{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x", "--secret", secret},
		{"append", "--stream", "s", "--id", "e1", "--kind", "k"},
	} {
		db := filepath.Join(dir, "new", string(rune('a'+i))+".db")
		require.NoError(t, os.MkdirAll(filepath.Dir(db), 0o755))
		r := newHerald(t, "sqlite:"+db).run(`{"a":1}`, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		_, err := os.Stat(db)
		require.NoError(t, err, "%v creates the database", args)
	}
	// And a sweep serves the file migrate up made.
	r := newHerald(t, "sqlite:"+filepath.Join(dir, "new", "a.db")).run("", "sweep", "--namespace", "webhook", "--at", "2026-03-15T11:00:00Z")
	require.Equal(t, 0, r.code, r.stderr)
}
