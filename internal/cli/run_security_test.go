package cli

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/keytest"
)

// certPair writes a self-signed certificate for 127.0.0.1 and its key in
// dir.
func certPair(t *testing.T, dir string) (certFile, keyFile string) {
	certPEM, keyPEM := keytest.SelfSigned(t, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "herald test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)})
	certFile, keyFile = filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	return certFile, keyFile
}

// herald run refuses, before it opens anything, a weak token (saying how to
// make one, never repeating it), a metrics, admin or API address off
// loopback in clear (no token needed for metrics: a stored reader token
// reads them), and half a TLS pair; with TLS the README's non-loopback example
// passes every check (192.0.2.1, a documentation address no machine has,
// then fails to bind).
func TestRunRefusesWeakTokensAndClearOffLoopback(t *testing.T) {
	strong := "0f9c2a7e41b85d36c0e1f4a29b7d58e3"
	certFile, keyFile := certPair(t, t.TempDir())
	off := []string{"run", "--metrics-addr", "", "--admin-addr", ""}
	for _, c := range []struct {
		env  map[string]string
		args []string
		code int
		says []string
	}{
		{map[string]string{"HERALD_ADMIN_TOKEN": "q7"}, off, ExitUsage, []string{"HERALD_ADMIN_TOKEN is too weak", "openssl rand -hex 32"}},
		{map[string]string{"HERALD_API_TOKEN": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, off, ExitUsage, []string{"HERALD_API_TOKEN is too weak"}},
		{map[string]string{"HERALD_ADMIN_TOKEN": strong}, []string{"run", "--metrics-addr", "", "--admin-addr", "192.0.2.1:9465"}, ExitUsage,
			[]string{"--admin-addr 192.0.2.1:9465 is not a loopback address", "--tls-cert", "--tls-terminated-by-proxy"}},
		{map[string]string{"HERALD_API_TOKEN": strong}, []string{"run", "--metrics-addr", "", "--admin-addr", "", "--api-addr", ":9466"}, ExitUsage,
			[]string{"--api-addr :9466 is not a loopback address"}},
		{nil, []string{"run", "--metrics-addr", "0.0.0.0:9090", "--admin-addr", ""}, ExitUsage,
			[]string{"--metrics-addr 0.0.0.0:9090 is not a loopback address", "--tls-cert", "--tls-terminated-by-proxy"}},
		{nil, append(off, "--tls-cert", certFile), ExitUsage, []string{"--tls-cert and --tls-key go together"}},
		{nil, append(off, "--tls-cert", certFile, "--tls-key", certFile), ExitUsage, []string{"--tls-cert, --tls-key: TLS certificate"}},
		{map[string]string{"HERALD_ADMIN_TOKEN": strong}, []string{"run", "--metrics-addr", "", "--admin-addr", "192.0.2.1:9465", "--tls-cert", certFile, "--tls-key", keyFile},
			ExitError, []string{"--admin-addr 192.0.2.1:9465: listen tcp 192.0.2.1:9465"}},
	} {
		db := newDB(t)
		r := runEnv(t, db, c.env, c.args...)
		require.Equal(t, c.code, r.code, "%v %v: %s", c.env, c.args, r.stderr)
		for _, say := range c.says {
			require.Contains(t, r.stderr, say, "%v %v", c.env, c.args)
		}
		for _, v := range c.env {
			if v != strong {
				require.NotContains(t, r.stderr, v, "the token is not repeated")
			}
		}
		requireNoDB(t, db)
	}

	help := heraldOK(t, "", "", "run", "--help")
	for _, flag := range []string{"--tls-cert", "--tls-key", "--tls-terminated-by-proxy", "openssl rand -hex 32", "429", "/metrics off loopback"} {
		require.Contains(t, help, flag)
	}
}
