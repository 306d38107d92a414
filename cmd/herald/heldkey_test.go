package main_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-fed/httpsig"
	"github.com/stretchr/testify/require"
)

// TestDaemonSignsWithAHeldKey: `herald run` gives the ActivityPub
// projection its store's held keys, so an inbox registered with --key-id
// alone gets the post, signed with the key `herald keys add` holds, as
// go-fed/httpsig verifies it. (herald run once built its projections before
// the database was open, and every such message failed: "no key store".)
func TestDaemonSignsWithAHeldKey(t *testing.T) {
	const keyID = "https://social.example/users/alice#main-key"
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemFile := filepath.Join(t.TempDir(), "alice.pem")
	require.NoError(t, os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600))

	verified := make(chan error, 1)
	inbox := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := httpsig.NewVerifier(r)
		if err == nil && v.KeyId() != keyID {
			err = fmt.Errorf("keyId %q, want %q", v.KeyId(), keyID)
		} else if err == nil {
			err = v.Verify(&key.PublicKey, httpsig.RSA_SHA256)
		}
		select {
		case verified <- err:
		default:
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(inbox.Close)

	h := newHerald(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	h.ok("migrate", "up")
	h.ok("keys", "add", "--key-id", keyID, "--private-key", pemFile)
	h.ok("register", "--stream", "actor/alice", "--id", "bob", "--namespace", "activitypub", "--url", inbox.URL+"/inbox",
		"--key-id", keyID, "--signature-scheme", "cavage")

	daemon := exec.Command(bin, append([]string{"--database", h.db, "run", "--every", "200ms", "--metrics-addr", "", "--admin-addr", ""}, allow...)...)
	daemon.Dir = h.dir
	var logs bytes.Buffer
	daemon.Stdout, daemon.Stderr = &logs, &logs
	require.NoError(t, daemon.Start())
	t.Cleanup(func() { _ = daemon.Process.Kill(); _ = daemon.Wait() })

	r := h.run(`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://social.example/users/alice/statuses/1/activity","type":"Create","actor":"https://social.example/users/alice","to":["https://www.w3.org/ns/activitystreams#Public"],"object":{"id":"https://social.example/users/alice/statuses/1","type":"Note","content":"hi"}}`,
		"append", "--stream", "actor/alice", "--id", "https://social.example/users/alice/statuses/1/activity", "--kind", "Create", "--content-type", "application/activity+json")
	require.Equal(t, 0, r.code, r.stderr)
	select {
	case err := <-verified:
		require.NoError(t, err, "the inbox verifies the held key's signature")
	case <-time.After(30 * time.Second):
		t.Fatalf("the inbox got nothing; logs:\n%s", logs.String())
	}
}

// TestHostsShowsTheSchemeAnInboxAccepted: an inbox that refuses RFC 9421
// gets the same delivery signed with draft-cavage, and herald hosts (table
// and --json) shows the scheme its host row keeps, so an operator sees
// which hosts verify only draft-cavage.
func TestHostsShowsTheSchemeAnInboxAccepted(t *testing.T) {
	const keyID = "https://social.example/users/alice#main-key"
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemFile := filepath.Join(t.TempDir(), "alice.pem")
	require.NoError(t, os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600))
	inbox := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Signature-Input") != "" {
			w.WriteHeader(http.StatusUnauthorized) // verifies draft-cavage only
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(inbox.Close)
	host := strings.TrimPrefix(inbox.URL, "http://")

	h := newHerald(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	h.ok("keys", "add", "--key-id", keyID, "--private-key", pemFile)
	h.ok("register", "--stream", "actor/alice", "--id", "bob", "--namespace", "activitypub", "--url", inbox.URL+"/inbox", "--key-id", keyID)
	r := h.run(`{"id":"https://social.example/a/1","type":"Create","actor":"https://social.example/users/alice"}`,
		"append", "--stream", "actor/alice", "--id", "https://social.example/a/1", "--kind", "Create", "--content-type", "application/activity+json")
	require.Equal(t, 0, r.code, r.stderr)
	h.ok(append([]string{"sweep", "--namespace", "activitypub", "--at", "2026-03-15T11:00:00Z"}, allow...)...)

	out := h.ok("hosts")
	require.Contains(t, out, "SCHEME")
	require.Regexp(t, regexp.QuoteMeta(host)+` +up .* cavage`, out)
	var hosts []struct {
		Host     string    `json:"host"`
		Scheme   string    `json:"signature_scheme"`
		SchemeAt time.Time `json:"scheme_at"`
	}
	h.json(&hosts, "hosts")
	require.Len(t, hosts, 1)
	require.Equal(t, host, hosts[0].Host)
	require.Equal(t, "cavage", hosts[0].Scheme)
	require.Equal(t, "2026-03-15T11:00:00Z", hosts[0].SchemeAt.UTC().Format(time.RFC3339), "learned at the sweep's instant")
}
