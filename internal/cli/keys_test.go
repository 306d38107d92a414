package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/internal/operator"
)

// rsaKeyFile writes a new 2048-bit RSA key, PKCS#8 PEM, and returns its
// path and a line of its body (what must never be printed).
func rsaKeyFile(t *testing.T, name string) (string, string) {
	_, keyPEM := keytest.RSA(t)
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, keyPEM, 0o600))
	return path, strings.Split(string(keyPEM), "\n")[5]
}

// TestKeysAreHeldOnceRotatedAndRemovedNeverPrinted: add, list, rotate and
// remove show the id, algorithm and fingerprint, never the key; a
// registration names the key by id; remove is refused while one does,
// naming how many, unless --force.
func TestKeysAreHeldOnceRotatedAndRemovedNeverPrinted(t *testing.T) {
	db := newDB(t)
	const id = "https://a.example/u/alice#main-key"
	first, firstLine := rsaKeyFile(t, "alice.pem")
	second, secondLine := rsaKeyFile(t, "alice-2.pem")
	heraldOK(t, db, "", "migrate", "up")

	require.Contains(t, heraldOK(t, db, "", "keys", "list"), "No key")
	added := heraldOK(t, db, "", "keys", "add", "--key-id", id, "--private-key", first)
	require.Contains(t, added, "Added "+id+": RSA, SHA256:")
	r := runCLI(t, db, "", "keys", "add", "--key-id", id, "--private-key", second)
	require.Equal(t, ExitUsage, r.code, "an id held already: %s", r.stderr)
	require.Contains(t, r.stderr, "--key-id", "names the flag")
	require.Contains(t, r.stderr, "herald keys rotate", "says what replaces a held key")
	require.NotContains(t, r.stderr, "UNIQUE", "not the database's words")

	var list []operator.KeyView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "--json", "keys", "list")), &list))
	require.Len(t, list, 1)
	require.Equal(t, id, list[0].ID)
	require.Equal(t, "RSA", list[0].Algorithm)
	require.EqualValues(t, 1, list[0].Version)
	require.Contains(t, added, list[0].Fingerprint)

	heraldOK(t, db, "", "register", "--stream", "actor/alice", "--id", "bob", "--namespace", "activitypub",
		"--url", "https://b.example/inbox", "--key-id", id)
	r = runCLI(t, db, "", "register", "--stream", "actor/alice", "--id", "carol", "--namespace", "activitypub",
		"--url", "https://c.example/inbox", "--key-id", "https://a.example/u/nobody#main-key")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "invalid --key-id")
	require.Contains(t, r.stderr, "herald keys add")

	rotated := heraldOK(t, db, "", "keys", "rotate", "--key-id", id, "--private-key", second)
	require.Contains(t, rotated, "to version 2")
	require.NotContains(t, rotated, list[0].Fingerprint, "the new key's fingerprint")

	r = runCLI(t, db, "", "keys", "remove", "--key-id", id)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "1 registration")
	require.Contains(t, heraldOK(t, db, "", "keys", "list"), id, "a refused remove keeps the key")
	require.Contains(t, heraldOK(t, db, "", "keys", "remove", "--key-id", id, "--force"), "1 registration named it")
	require.Contains(t, heraldOK(t, db, "", "keys"), "No key")

	for _, out := range []string{added, rotated, r.stderr} {
		require.NotContains(t, out, firstLine)
		require.NotContains(t, out, secondLine)
	}
}

// TestKeysAddRefusesBadInputNamingTheFlag: a relative key id, a file that
// is no key, a missing file or flag are usage errors naming the flag, and
// hold no key.
func TestKeysAddRefusesBadInputNamingTheFlag(t *testing.T) {
	db := newDB(t)
	good, _ := rsaKeyFile(t, "alice.pem")
	heraldOK(t, db, "", "migrate", "up")
	notKey := filepath.Join(t.TempDir(), "note.txt")
	require.NoError(t, os.WriteFile(notKey, []byte("hello"), 0o600))
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--key-id", "/u/alice#main-key", "--private-key", good}, "--key-id"},
		{[]string{"--key-id", "https://a.example/u/alice#k", "--private-key", notKey}, "--private-key"},
		{[]string{"--key-id", "https://a.example/u/alice#k", "--private-key", notKey + ".missing"}, "--private-key"},
		{[]string{"--private-key", good}, "--key-id"},
	} {
		r := runCLI(t, db, "", append([]string{"keys", "add"}, c.args...)...)
		require.Equal(t, ExitUsage, r.code, "%q: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.flag, c.args)
	}
	require.Contains(t, heraldOK(t, db, "", "keys", "list"), "No key")
	r := runCLI(t, db, "", "keys", "rotate", "--key-id", "https://a.example/u/none#k", "--private-key", good)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "herald keys list")
}

// Registering an ActivityPub registration again without --private-key-file
// moves it from its own copy of a key to the key held under --key-id: the
// command says so, and says nothing when it already signed with the held one.
func TestReRegisterWithoutTheKeyFileSaysItNowSignsWithTheHeldKey(t *testing.T) {
	db := newDB(t)
	const id = "https://a.example/u/alice#main-key"
	own, _ := rsaKeyFile(t, "own.pem")
	held, _ := rsaKeyFile(t, "held.pem")
	register := []string{"register", "--stream", "actor/alice", "--id", "bob", "--namespace", "activitypub",
		"--url", "https://b.example/inbox", "--key-id", id}
	heraldOK(t, db, "", append(register, "--private-key-file", own)...)
	heraldOK(t, db, "", "keys", "add", "--key-id", id, "--private-key", held)

	out := heraldOK(t, db, "", register...)
	require.Contains(t, out, "it now signs with the key held under --key-id "+id)
	r := runCLI(t, db, "", "keys", "remove", "--key-id", id)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "1 registration", "the registration signs with the held key")

	require.NotContains(t, heraldOK(t, db, "", register...), "now signs with", "it signed with the held key already")
}

// A held key rotated to Ed25519 would leave a registration or a
// subscription pinned to draft-cavage unable to sign: the rotation is
// refused, naming them, and the held key stays as it was; once none pins
// it, it rotates. A key removed with --force is added again under the same
// rule.
func TestRotatingToEd25519IsRefusedWhileACavagePinnedRegistrationSignsWithIt(t *testing.T) {
	db := newDB(t)
	const id = "https://a.example/u/alice#main-key"
	rsaFile, _ := rsaKeyFile(t, "rsa.pem")
	_, edPEM := keytest.Ed25519(t)
	edFile := filepath.Join(t.TempDir(), "ed.pem")
	require.NoError(t, os.WriteFile(edFile, edPEM, 0o600))
	heraldOK(t, db, "", "migrate", "up")
	heraldOK(t, db, "", "keys", "add", "--key-id", id, "--private-key", rsaFile)
	register := []string{"register", "--stream", "actor/alice", "--id", "bob", "--namespace", "activitypub",
		"--url", "https://b.example/inbox", "--key-id", id}
	heraldOK(t, db, "", append(register, "--signature-scheme", "cavage")...)
	subscribe := []string{"register", "--stream-prefix", "later/", "--id", "dave", "--namespace", "activitypub",
		"--url", "https://d.example/inbox", "--key-id", id}
	heraldOK(t, db, "", append(subscribe, "--signature-scheme", "cavage")...)

	r := runCLI(t, db, "", "keys", "rotate", "--key-id", id, "--private-key", edFile)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "would sign for 2 that pin draft-cavage")
	require.Contains(t, r.stderr, "registration stream=actor/alice id=bob")
	require.Contains(t, r.stderr, "subscription ")
	require.Contains(t, heraldOK(t, db, "", "keys", "list"), "RSA", "the refused rotation kept the key")

	heraldOK(t, db, "", append(register, "--signature-scheme", "rfc9421")...)
	r = runCLI(t, db, "", "keys", "rotate", "--key-id", id, "--private-key", edFile)
	require.Equal(t, ExitUsage, r.code, "the subscription still pins cavage: %s", r.stderr)
	require.Contains(t, r.stderr, "would sign for 1 that pin")
	heraldOK(t, db, "", subscribe...)
	require.Contains(t, heraldOK(t, db, "", "keys", "rotate", "--key-id", id, "--private-key", edFile), "to version 2")
	require.Contains(t, heraldOK(t, db, "", "keys", "list"), "Ed25519")

	heraldOK(t, db, "", "keys", "rotate", "--key-id", id, "--private-key", rsaFile)
	heraldOK(t, db, "", append(register, "--signature-scheme", "cavage")...)
	heraldOK(t, db, "", "keys", "remove", "--key-id", id, "--force")
	r = runCLI(t, db, "", "keys", "add", "--key-id", id, "--private-key", edFile)
	require.Equal(t, ExitUsage, r.code, "added again under the same rule: %s", r.stderr)
	require.Contains(t, r.stderr, "would sign for 1 that pin draft-cavage")
	require.Contains(t, heraldOK(t, db, "", "keys", "add", "--key-id", id, "--private-key", rsaFile), "RSA")
}

// TestKeysRemoveRefusalsSayWhatToDo: remove of a key a registration signs
// with, without --force, says so in a sentence naming --force (no bare
// ": conflict"), and keeps the key; an empty --key-id is named as such, not
// looked up; record-status with an empty --id names --id.
func TestKeysRemoveRefusalsSayWhatToDo(t *testing.T) {
	db := newDB(t)
	const id = "https://a.example/u/alice#main-key"
	key, _ := rsaKeyFile(t, "alice.pem")
	heraldOK(t, db, "", "keys", "add", "--key-id", id, "--private-key", key)
	heraldOK(t, db, "", "register", "--stream", "actor/alice", "--id", "bob", "--namespace", "activitypub",
		"--url", "https://b.example/inbox", "--key-id", id)

	r := runCLI(t, db, "", "keys", "remove", "--key-id", id)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Equal(t, `herald: key "`+id+`" signs the deliveries of 1 registration, so it was not removed: re-register it with another key first, `+
		"or remove it anyway with --force (its deliveries then fail until the key is added again)\n", r.stderr)
	require.Contains(t, heraldOK(t, db, "", "keys", "list"), id)

	for _, args := range [][]string{{"keys", "remove", "--key-id", ""}, {"record-status", "--id", ""}} {
		r = runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, "invalid "+args[len(args)-2]+": is empty", args)
		require.NotContains(t, r.stderr, "not found", args)
	}
}
