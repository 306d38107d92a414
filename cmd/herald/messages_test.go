package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/keytest"
)

// A command that reads or delivers refuses a SQLite path with no file,
// naming it and --database, exits 2 and creates nothing: a mistyped path
// must not serve a new, empty database. register, append, keys add and
// migrate up create one.
func TestOnlyCreatingCommandsCreateASQLiteFile(t *testing.T) {
	dir := t.TempDir()
	_, pem := keytest.Ed25519(t)
	key := filepath.Join(t.TempDir(), "alice.pem")
	require.NoError(t, os.WriteFile(key, pem, 0o600))
	const keyID = "https://example.com/users/alice#main-key"
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
		{"keys", "rotate", "--key-id", keyID, "--private-key", key},
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
	// A creating command refuses bad input before it makes the file.
	r := h.run("", "keys", "add", "--key-id", "alice", "--private-key", key)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "invalid --key-id: ")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "a refused keys add created a file")

	for i, args := range [][]string{
		{"migrate", "up"},
		{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x", "--secret", secret},
		{"append", "--stream", "s", "--id", "e1", "--kind", "k"},
		{"keys", "add", "--key-id", keyID, "--private-key", key},
	} {
		db := filepath.Join(dir, "new", string(rune('a'+i))+".db")
		require.NoError(t, os.MkdirAll(filepath.Dir(db), 0o755))
		r := newHerald(t, "sqlite:"+db).run(`{"a":1}`, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		_, err := os.Stat(db)
		require.NoError(t, err, "%v creates the database", args)
	}
	// And a sweep serves the file migrate up made.
	r = newHerald(t, "sqlite:"+filepath.Join(dir, "new", "a.db")).run("", "sweep", "--namespace", "webhook", "--at", "2026-03-15T11:00:00Z")
	require.Equal(t, 0, r.code, r.stderr)
}

// A --private-key-file (or a file: secret) that cannot be read is a usage
// error (exit 2) naming the flag and the path, quoted: a path is the
// user's text and may hold control bytes. Nothing is created.
func TestUnreadableKeyFileNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	h := newHerald(t, "sqlite:"+db)
	missing := filepath.Join(dir, "no\x1b[31mkey\n.pem")
	r := h.run("", "register", "--stream", "actor/alice", "--id", "https://b.example/inbox", "--namespace", "activitypub",
		"--url", "https://b.example/inbox", "--key-id", "https://a.example/users/alice#main-key", "--private-key-file", missing)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, fmt.Sprintf("--private-key-file %q: no such file or directory", missing))
	require.NotContains(t, r.stderr, "\x1b", "the path is quoted, its bytes escaped")
	require.NotContains(t, r.stderr, "open "+dir, "the os error's unquoted copy of the path is left out")

	r = h.run("", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://b.example/hooks",
		"--secret", "file:"+missing)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, fmt.Sprintf("--secret %q: no such file or directory", "file:"+missing))
	require.NotContains(t, r.stderr, "\x1b")

	_, err := os.Stat(db)
	require.ErrorIs(t, err, os.ErrNotExist, "a refused register creates nothing")
}

// A bad value's error names the flag the user typed, not the field the
// library calls it ("to_seq", "url", "registration id", Options.Timeout,
// AllowHosts[0]).
func TestBadValuesNameTheFlag(t *testing.T) {
	h := newHerald(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	h.ok("register", "--stream", "orders", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/in", "--secret", secret)
	for _, c := range []struct {
		args      []string
		says, not string
	}{
		{[]string{"skip", "--stream", "orders", "--id", "r", "--to-seq", "9"}, "invalid --to-seq: is 9", "to_seq"},
		{[]string{"rewind", "--stream", "orders", "--id", "r", "--to-seq", "5"}, "invalid --to-seq: is 5", "to_seq"},
		{[]string{"register", "--stream", "orders", "--id", "r2", "--namespace", "webhook", "--url", "https://hooks.example/in", "--secret", secret, "--from-seq", "5"},
			"invalid --from-seq: is 5", "next seq"},
		{[]string{"register", "--stream", "orders", "--id", "r", "--namespace", "webhook", "--url", "https://u:p@hooks.example/in", "--secret", secret},
			"invalid --url: has userinfo", "invalid url"},
		{[]string{"register", "--stream", "orders", "--id", "r\x7f", "--namespace", "webhook", "--url", "https://hooks.example/in", "--secret", secret},
			"invalid --id: ", "registration id"},
		{[]string{"sweep", "--namespace", "webhook", "--timeout", "1h"}, "invalid --timeout: is 1h0m0s: it must be from 1ms to 10m0s", "Options.Timeout"},
		{[]string{"run", "--allow-host", "ok.example", "--allow-host", "*.*.example", "--metrics-addr", "", "--admin-addr", ""},
			`invalid --allow-host (the 2nd): "*.*.example" has a wildcard`, "AllowHosts"},
	} {
		r := h.run("", c.args...)
		require.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.says, c.args)
		require.NotContains(t, r.stderr, c.not, c.args)
		require.NotContains(t, r.stderr, "transport: new", c.args)
	}
}

// Two registrations that "stream/id" would print alike (a/b + c, a + b/c)
// are told apart in every command's words: stream=… id=…, a part that
// needs it quoted.
func TestRegistrationNamesAreUnambiguous(t *testing.T) {
	h := newHerald(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	for _, c := range []struct{ stream, id, name string }{
		{"a/b", "c", "stream=a/b id=c"},
		{"a", "b/c", "stream=a id=b/c"},
		{"a", "b c", `stream=a id="b c"`},
	} {
		r := h.run(`{}`, "append", "--stream", c.stream, "--id", c.stream+"|"+c.id, "--kind", "k")
		require.Equal(t, 0, r.code, r.stderr)
		reg := []string{"register", "--stream", c.stream, "--id", c.id, "--namespace", "webhook", "--url", "https://hooks.example/in", "--secret", secret}
		require.Contains(t, h.ok(reg...), "Registered "+c.name+": webhook to hooks.example:443", c.name)
		require.Contains(t, h.ok(reg...), "Updated "+c.name+": webhook", c.name)
		require.Contains(t, h.ok("skip", "--stream", c.stream, "--id", c.id, "--to-seq", "2"), c.name+": cursor 1 → 2", c.name)
		require.Contains(t, h.ok("rewind", "--stream", c.stream, "--id", c.id, "--to-seq", "1"), c.name+": cursor 2 → 1", c.name)
		require.Contains(t, h.ok("unpark", "--stream", c.stream, "--id", c.id), c.name+" was not parked; nothing changed.", c.name)
		require.Contains(t, h.ok("unregister", "--stream", c.stream, "--id", c.id), "Unregistered "+c.name+" (webhook to", c.name)
		for _, args := range [][]string{
			{"unpark", "--stream", c.stream, "--id", c.id},
			{"skip", "--stream", c.stream, "--id", c.id, "--to-seq", "2"},
			{"evidence", "--stream", c.stream, "--id", c.id},
			{"unregister", "--stream", c.stream, "--id", c.id},
		} {
			r := h.run("", args...)
			require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
			require.Contains(t, r.stderr, "no registration "+c.name+": not found", args)
		}
	}
}
