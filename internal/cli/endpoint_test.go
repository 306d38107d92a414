package cli

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/keytest"
)

// register --header refuses, naming the flag and the header, what each
// namespace sets and what no registration may, and opens nothing.
func TestRegisterRefusesReservedHeadersNamingTheFlag(t *testing.T) {
	db := newDB(t)
	keyFile := filepath.Join(t.TempDir(), "actor.pem")
	require.NoError(t, os.WriteFile(keyFile, rsaKeyPEM(t), 0o600))
	base := map[string][]string{
		"webhook":     {"--secret", goodSecret},
		"cloudevents": {"--source", "/orders", "--token", "t0ken-value"},
		"a2a":         {"--token", "tok"},
		"activitypub": {"--key-id", "https://example.com/users/alice#main-key", "--private-key-file", keyFile},
	}
	for _, c := range []struct{ namespace, header, want string }{
		{"webhook", "webhook-signature: v1,x", "--header webhook-signature"},
		{"webhook", "Connection: close", "--header Connection"},
		{"webhook", "Host: evil.example", "--header Host"},
		{"webhook", "Content-Type: text/plain", "--header Content-Type"},
		{"webhook", "Herald-Seq: 1", "--header Herald-Seq"},
		{"webhook", "X-Bad Name: 1", `--header "X-Bad Name"`},
		{"webhook", "X-Tenant", "--header has no ':'"},
		{"cloudevents", "ce-id: 1", "--header ce-id"},
		{"cloudevents", "Authorization: Basic x", "--header Authorization"},
		{"a2a", "X-A2A-Notification-Token: t", "--header X-A2A-Notification-Token"},
		{"activitypub", "Signature: x", "--header Signature"},
		{"activitypub", "Digest: x", "--header Digest"},
	} {
		args := append([]string{"register", "--stream", "s", "--id", "r", "--namespace", c.namespace, "--url", "https://hooks.example/x",
			"--header", c.header}, base[c.namespace]...)
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%s %q: %s", c.namespace, c.header, r.stderr)
		require.Contains(t, r.stderr, c.want, c.namespace)
		requireNoDB(t, db, "a refused register opened nothing")
	}
	// Authorization is the receiver's to ask for where the wire sets none.
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "ok", "--namespace", "webhook", "--url", "https://hooks.example/x",
		"--secret", goodSecret, "--header", "Authorization: Bearer abc")
}

// A header given to register arrives with every request; what is shown of
// it is its name, never its value.
func TestRegisterHeaderArrivesAndOnlyItsNameIsShown(t *testing.T) {
	got := make(chan http.Header, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	db := newDB(t)
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", srv.URL,
		"--secret", goodSecret, "--header", "X-Tenant: 42", "--header", "X-Api-Key:  s3cret-header-value ")
	heraldOK(t, db, `{}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	heraldOK(t, db, "", "sweep", "--namespace", "webhook", "--allow-http", "--allow-private-network")
	h := received(t, got)
	require.Equal(t, "42", h.Get("X-Tenant"))
	require.Equal(t, "s3cret-header-value", h.Get("X-Api-Key"))

	out := heraldOK(t, db, "", "registrations", "--json")
	require.NotContains(t, out, "s3cret-header-value")
	var regs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &regs))
	require.Equal(t, []any{"X-Api-Key", "X-Tenant"}, regs[0]["headers"])
}

// A webhook registered without --secret gets one, shown once; an update
// without --secret keeps it; rotate-secret adds a new one and keeps the old
// signing until --expire-old after --at.
func TestRegisterMakesASecretAndRotateSecretKeepsTheOldUntilItExpires(t *testing.T) {
	sigs := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sigs <- r.Header.Get("Webhook-Signature")
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	db := newDB(t)
	args := []string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", srv.URL}
	var made struct {
		Secret string `json:"secret"`
	}
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", append(args, "--json")...)), &made))
	require.True(t, strings.HasPrefix(made.Secret, "whsec_"), made.Secret)
	again := heraldOK(t, db, "", args...)
	require.NotContains(t, again, "whsec_", "an update without --secret keeps the secret and shows none")
	require.NotContains(t, heraldOK(t, db, "", "registrations", "--json"), made.Secret)

	var rot struct {
		Secret   string    `json:"secret"`
		OldUntil time.Time `json:"old_secrets_until"`
	}
	out := heraldOK(t, db, "", "rotate-secret", "--stream", "s", "--id", "r", "--expire-old", "24h", "--at", "2026-03-15T11:00:00Z", "--json")
	require.NoError(t, json.Unmarshal([]byte(out), &rot))
	require.NotEqual(t, made.Secret, rot.Secret)
	require.Equal(t, time.Date(2026, 3, 16, 11, 0, 0, 0, time.UTC), rot.OldUntil)

	heraldOK(t, db, `{}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	heraldOK(t, db, "", "sweep", "--namespace", "webhook", "--allow-http", "--allow-private-network", "--at", "2026-03-16T10:59:59Z")
	require.Len(t, strings.Fields(received(t, sigs)), 2, "during the overlap both secrets sign")
	heraldOK(t, db, "", "rewind", "--stream", "s", "--id", "r", "--to-seq", "1", "--at", "2026-03-16T11:00:00Z")
	heraldOK(t, db, "", "sweep", "--namespace", "webhook", "--allow-http", "--allow-private-network", "--at", "2026-03-16T11:00:00Z")
	require.Len(t, strings.Fields(received(t, sigs)), 1, "after the expiry only the new secret signs")

	for _, bad := range []string{"-1h", "31d", "soon"} {
		r := runCLI(t, db, "", "rotate-secret", "--stream", "s", "--id", "r", "--expire-old", bad)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, `invalid --expire-old: "`+bad+`" is `, "refused naming the flag, as every span flag is")
	}
	require.Contains(t, runCLI(t, db, "", "rotate-secret", "--stream", "s", "--id", "r", "--expire-old", "31d").stderr, "it must be 0s to 30d")
	out = heraldOK(t, db, "", "rotate-secret", "--stream", "s", "--id", "r", "--expire-old", "7d", "--at", "2026-03-16T11:00:00Z", "--json")
	require.NoError(t, json.Unmarshal([]byte(out), &rot))
	require.Equal(t, time.Date(2026, 3, 23, 11, 0, 0, 0, time.UTC), rot.OldUntil, "whole days, as every span flag takes them")
}

// TestRegistrationsShowWhenRotatedSecretsStopSigning: after a rotation,
// herald registrations says how many secrets sign and until when the old
// ones do (rotate-secret printed it once); a rotation with --expire-old 0
// answers with the older rotation's secrets still signing, not "stopped".
func TestRegistrationsShowWhenRotatedSecretsStopSigning(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://r.example/hooks")
	type view struct {
		Secrets  int       `json:"secrets"`
		OldUntil time.Time `json:"old_secrets_until"`
	}
	shown := func() view {
		var vs []view
		require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &vs))
		require.Len(t, vs, 1)
		return vs[0]
	}
	require.Equal(t, view{Secrets: 1}, shown(), "one secret, none retiring")

	day := time.Date(2026, 3, 16, 11, 0, 0, 0, time.UTC)
	heraldOK(t, db, "", "rotate-secret", "--stream", "s", "--id", "r", "--expire-old", "24h", "--at", "2026-03-15T11:00:00Z")
	require.Equal(t, view{Secrets: 1, OldUntil: day}, shown())

	out := heraldOK(t, db, "", "rotate-secret", "--stream", "s", "--id", "r", "--expire-old", "0s", "--at", "2026-03-15T12:00:00Z")
	require.Contains(t, out, "The old secrets sign beside it until 2026-03-16 11:00:00Z.", "the first rotation's old secret still signs")
	require.Equal(t, view{Secrets: 1, OldUntil: day}, shown())
}

// register --client-cert and --client-key are checked before anything is
// written: parse, key match, and validity by this machine's clock now.
func TestRegisterChecksTheClientCertificate(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	now := time.Now()
	cert, key := selfSigned(t, now.Add(-time.Hour), now.Add(time.Hour))
	oldCert, oldKey := selfSigned(t, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	_, otherKey := selfSigned(t, now.Add(-time.Hour), now.Add(time.Hour))
	db := newDB(t)
	args := func(c, k string) []string {
		return []string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
			"--secret", goodSecret, "--client-cert", c, "--client-key", k}
	}
	for _, c := range []struct{ cert, key, want string }{
		{write("old.crt", oldCert), write("old.key", oldKey), "invalid --client-cert: expired at"},
		{write("a.crt", cert), write("other.key", otherKey), "invalid --client-key: private key does not match public key"},
		{write("a2.crt", cert), filepath.Join(dir, "missing.key"), `--client-key "` + filepath.Join(dir, "missing.key")},
	} {
		r := runCLI(t, db, "", args(c.cert, c.key)...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, c.want)
		require.NotContains(t, r.stderr, "PRIVATE KEY")
		requireNoDB(t, db, "a refused register opened nothing")
	}
	out := heraldOK(t, db, "", append(args(write("ok.crt", cert), write("ok.key", key)), "--json")...)
	require.Contains(t, out, `"client_cert": true`)
	r := runCLI(t, db, "", "sweep", "--namespace", "webhook", "--egress-proxy", "https://proxy.example:3128")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "invalid --egress-proxy: has scheme \"https\"")
}

// selfSigned returns a PEM certificate valid from notBefore to notAfter and
// its PEM key.
func selfSigned(t *testing.T, notBefore, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	return keytest.SelfSigned(t, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "herald client"}, NotBefore: notBefore, NotAfter: notAfter,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// rsaKeyPEM returns a new 2048-bit RSA key, PKCS#8 PEM: an actor's.
func rsaKeyPEM(t *testing.T) []byte {
	t.Helper()
	_, p := keytest.RSA(t)
	return p
}

// received is what a sweep that has ended left in c: the receiver answered
// before the sweep returned.
func received[T any](t *testing.T, c chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	default:
		t.Fatal("the receiver got nothing")
		panic("unreachable")
	}
}
