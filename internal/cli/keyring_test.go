package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/seal"
)

// registerEverySecret registers one receiver of each namespace with its
// secrets in the SQLite file db and returns the secrets.
func registerEverySecret(t *testing.T, db string) []string {
	keyFile, pemLine := rsaKeyFile(t, "alice.pem")

	heraldOK(t, db, "", "register", "--stream", "s", "--id", "wh", "--namespace", "webhook", "--url", "https://r.example/wh", "--secret", goodSecret)
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "ce", "--namespace", "cloudevents", "--url", "https://r.example/ce",
		"--source", "https://shop.example", "--token", "ce-token-5d1c9e")
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "a2a", "--namespace", "a2a", "--url", "https://r.example/a2a",
		"--token", "a2a-token-7b2e41", "--auth-scheme", "Bearer", "--credentials", "a2a-cred-93aa0f")
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "ap", "--namespace", "activitypub", "--url", "https://r.example/inbox",
		"--key-id", "https://a.example/u/alice#main-key", "--private-key-file", keyFile)
	heldFile, heldLine := rsaKeyFile(t, "bob.pem")
	heraldOK(t, db, "", "keys", "add", "--key-id", "https://a.example/u/bob#main-key", "--private-key", heldFile)
	return []string{goodSecret, "ce-token-5d1c9e", "a2a-token-7b2e41", "a2a-cred-93aa0f", pemLine, heldLine}
}

// TestTheEmbeddedDefaultSealsUnderAKeyFileMadeBesideIt: with no keyring
// given, the first command makes PATH.keyring (0600) beside a 0600 database,
// which holds no secret (store/sqlite's test greps a live WAL too).
func TestTheEmbeddedDefaultSealsUnderAKeyFileMadeBesideIt(t *testing.T) {
	db := newDB(t)
	secrets := registerEverySecret(t, db)
	for _, name := range []string{db, db + ".keyring"} {
		fi, err := os.Stat(name)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	b, err := os.ReadFile(db) // the WAL was checkpointed into it as the command closed
	require.NoError(t, err)
	_, err = os.Stat(db + "-wal")
	require.ErrorIs(t, err, os.ErrNotExist, "no WAL left to grep")
	for _, s := range secrets {
		require.NotContains(t, string(b), s, "the database holds a secret in clear")
	}
	require.Contains(t, string(b), seal.Prefix, "the database holds the sealed configs")
	require.Contains(t, heraldOK(t, db, "", "registrations"), "r.example:443")

	other := filepath.Join(t.TempDir(), "other.keyring")
	heraldOK(t, "", "", "keyring", "new", "--keyring-file", other)
	r := runCLI(t, db, "", "registrations", "--keyring-file", other)
	require.Equal(t, ExitError, r.code, r.stderr)
	k, err := seal.LoadFile(db + ".keyring")
	require.NoError(t, err)
	require.Contains(t, r.stderr, `key "`+k.Primary()+`": sealed under a key that is not in the keyring`)
}

// TestRotateResealRetire: after keyring rotate, reseal seals every config
// under the new key, and retire drops the old one with everything still
// read; retire reseals first, so nothing is left under the key it drops.
func TestRotateResealRetire(t *testing.T) {
	db := newDB(t)
	registerEverySecret(t, db)
	var before keyringView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "keyring", "list", "--json")), &before))
	heraldOK(t, db, "", "keyring", "rotate")

	var resealed resealView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "reseal", "--batch", "3", "--json")), &resealed))
	var after keyringView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "keyring", "list", "--json")), &after))
	// 4 registrations' configs and the actor key registerEverySecret adds.
	require.Equal(t, resealView{Read: 4, Resealed: 5, Primary: after.Primary}, resealed)
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "reseal", "--json")), &resealed))
	require.Equal(t, 0, resealed.Resealed, "reseal is idempotent")

	r := runCLI(t, db, "", "keyring", "retire", after.Primary)
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "is the primary")

	heraldOK(t, db, "", "keyring", "rotate")
	heraldOK(t, db, "", "keyring", "retire", before.Primary) // reseals under the newest first
	heraldOK(t, db, "", "keyring", "retire", after.Primary)
	var left keyringView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "keyring", "list", "--json")), &left))
	require.Len(t, left.Keys, 1)
	require.Contains(t, heraldOK(t, db, "", "registrations"), "r.example:443")
}

func TestKeyringErrorsSayWhatToDo(t *testing.T) {
	db := newDB(t)
	missing := filepath.Join(t.TempDir(), "none")
	r := runCLI(t, db, "", "register", "--keyring-file", missing, "--stream", "s", "--id", "wh", "--namespace", "webhook", "--url", "https://r.example/", "--secret", goodSecret)
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "herald keyring new --keyring-file "+missing)
	requireNoDB(t, db)

	r = runEnv(t, db, map[string]string{"HERALD_KEYRING": "k1:c2hvcnQ"}, "registrations")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "HERALD_KEYRING: keyring: key \"k1\" is")

	r = runCLI(t, "", "", "keyring", "new", "--database", "postgres://herald@localhost/herald")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "give --keyring-file")
}

// TestADatabaseNameTooLongForItsNeighboursNamesTheDatabase: a SQLite file
// name of 250 bytes fits a file system, SQLite's -journal and the default
// key file (+ .keyring) beside it do not: the refusal names --database (or
// HERALD_DATABASE_URL), which was given, not --keyring-file, which was not,
// and makes nothing. 247 bytes serve.
func TestADatabaseNameTooLongForItsNeighboursNamesTheDatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, strings.Repeat("a", 247)+".db")
	register := []string{"register", "--stream", "s", "--id", "wh", "--namespace", "webhook", "--url", "https://r.example/", "--secret", goodSecret}
	for _, args := range [][]string{register, {"status"}, {"tokens", "create", "--name", "ci", "--role", "reader"}} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, "herald: --database sqlite: the file name is 250 bytes, more than 247", args)
		require.NotContains(t, r.stderr, "--keyring-file", args)
	}
	r := runIn("", "", map[string]string{"HERALD_DATABASE_URL": "sqlite:" + db}, register...)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "herald: HERALD_DATABASE_URL sqlite: the file name is 250 bytes")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "a refused command made nothing")

	heraldOK(t, filepath.Join(dir, strings.Repeat("a", 244)+".db"), "", register...)
}

// TestADefaultKeyFileThatCannotBeReadNamesTheDatabase: the key file beside
// the database is --database's, so a refusal to read it names that, not a
// --keyring-file nobody gave.
func TestADefaultKeyFileThatCannotBeReadNamesTheDatabase(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "", "migrate", "up")
	require.NoError(t, os.Mkdir(db+".keyring", 0o700))
	r := runCLI(t, db, "", "status")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "herald: --database sqlite:"+db+": its key file "+strconv.Quote(db+".keyring")+": is a directory")
	require.Contains(t, r.stderr, "--keyring-file or HERALD_KEYRING gives another")
}

// TestADatabaseCopiedWithoutItsKeyFileGetsNoNewKey: a backup restored
// without the key file beside it (seal/doc.go: keep the two apart) holds
// secrets sealed under a key no file has; a new key file there would seal
// new secrets apart from the old and hide the restore's mistake. Every
// command refuses, names the key and the file, and makes nothing; with the
// key file back the database serves. A database with no sealed value still
// gets its key file on first use.
func TestADatabaseCopiedWithoutItsKeyFileGetsNoNewKey(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "wh", "--namespace", "webhook", "--url", "https://r.example/wh", "--secret", goodSecret)
	k, err := seal.LoadFile(db + ".keyring")
	require.NoError(t, err)
	require.NoError(t, os.Rename(db+".keyring", db+".saved"))

	for _, args := range [][]string{{"registrations"}, {"status"},
		{"register", "--stream", "s", "--id", "new", "--namespace", "webhook", "--url", "https://r.example/new"}} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, `sealed under key "`+k.Primary()+`"`, args)
		require.Contains(t, r.stderr, strconv.Quote(db+".keyring"), args)
		_, err := os.Stat(db + ".keyring")
		require.ErrorIs(t, err, os.ErrNotExist, "%v made a key file", args)
	}

	require.NoError(t, os.Rename(db+".saved", db+".keyring"))
	out := heraldOK(t, db, "", "registrations", "--json")
	require.Contains(t, out, `"id": "wh"`)
	require.NotContains(t, out, "config_error")
	require.NotContains(t, out, `"id": "new"`, "the refused register changed nothing")

	fresh := newDB(t)
	heraldOK(t, fresh, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	require.NoError(t, os.Remove(fresh+".keyring"))
	heraldOK(t, fresh, "", "status")
	_, err = os.Stat(fresh + ".keyring")
	require.NoError(t, err, "a database with no sealed value gets a key file")
}
