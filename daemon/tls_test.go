package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/internal/logtest"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, as PEM files
// in dir, and returns their paths and a pool that trusts the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM := keytest.SelfSigned(t, &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "herald test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	pool = x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	return certFile, keyFile, pool
}

// With --tls-cert and --tls-key the admin and API addresses speak HTTPS
// only: a client that trusts the certificate is answered, the page's cookie
// is Secure, plain HTTP gets no answer of the API; a certificate renewed on
// disk is served from the next handshake.
func TestAdminAndAPIServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	d := start(t, Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{webhook.New()},
		AdminAddr: "127.0.0.1:0", AdminToken: testToken, APIAddr: "127.0.0.1:0", APIToken: testToken,
		TLSCertFile: certFile, TLSKeyFile: keyFile})
	newClient := func(pool *x509.CertPool) *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	}
	c := newClient(pool)
	for _, addr := range []string{d.Addrs.Admin, d.Addrs.API} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+addr+"/v1/registrations", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := c.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NotNil(t, resp.TLS, addr)

		resp, err = http.Get("http://" + addr + "/v1/registrations")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP to %s", addr)
	}
	resp, err := c.Get("https://" + d.Addrs.Admin + "/ui/login")
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEmpty(t, resp.Cookies())
	require.True(t, resp.Cookies()[0].Secure, "the page's cookie over TLS")

	// Renewed: a new certificate and key replace the files.
	sub := t.TempDir()
	newCert, newKey, newPool := selfSigned(t, sub)
	for from, to := range map[string]string{newCert: certFile, newKey: keyFile} {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to, b, 0o600))
		later := time.Now().Add(time.Minute) // a modification time surely not the first's
		require.NoError(t, os.Chtimes(to, later, later))
	}
	resp, err = newClient(newPool).Get("https://" + d.Addrs.API + "/v1/openapi.json")
	require.NoError(t, err, "the renewed certificate")
	resp.Body.Close()
	_, err = newClient(pool).Get("https://" + d.Addrs.API + "/v1/openapi.json")
	require.Error(t, err, "the old certificate is no longer served")
}

// A metrics, admin or API address off loopback is refused at start in
// clear, and accepted with TLS or behind a proxy that terminates it; a TLS
// option without its pair, a certificate that does not load, and a
// listener without its address are refused, naming the options.
func TestOffLoopbackNeedsTLS(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t, t.TempDir())
	base := Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{webhook.New()}, AdminToken: testToken, APIToken: testToken}
	for _, addr := range []string{"0.0.0.0:9465", ":9465", "[::]:9465", "10.0.0.5:9465", "herald.example:9465"} {
		for _, field := range []string{"MetricsAddr", "AdminAddr", "APIAddr"} {
			o := base
			switch field {
			case "MetricsAddr":
				o.MetricsAddr = addr
			case "AdminAddr":
				o.AdminAddr = addr
			default:
				o.APIAddr = addr
			}
			_, err := New(o)
			require.ErrorContains(t, err, "Options."+field+" "+addr+" is not a loopback address")
			require.ErrorContains(t, err, "--tls-cert")
			require.ErrorContains(t, err, "--tls-terminated-by-proxy")
			withTLS := o
			withTLS.TLSCertFile, withTLS.TLSKeyFile = certFile, keyFile
			_, err = New(withTLS)
			require.NoError(t, err, "%s with TLS", addr)
			proxied := o
			proxied.TLSTerminatedByProxy = true
			_, err = New(proxied)
			require.NoError(t, err, "%s behind a TLS proxy", addr)
		}
	}
	o := base
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	o.Listeners.Metrics = ln // without MetricsAddr, whose rules it must follow
	_, err = New(o)
	require.ErrorContains(t, err, "Options.Listeners has a listener for Options.MetricsAddr, which is empty")

	o = base
	o.AdminAddr = "127.0.0.1:9465"
	_, err = New(o)
	require.NoError(t, err, "loopback in clear")
	o.TLSCertFile = certFile
	_, err = New(o)
	require.ErrorContains(t, err, "Options.TLSCertFile and Options.TLSKeyFile")
	o.TLSKeyFile = certFile // not a key
	_, err = New(o)
	require.ErrorContains(t, err, "TLS certificate "+certFile)
}

// A renewal that leaves no pair to load (a file removed before its
// replacement is written, a half-written key, a key of another
// certificate) keeps the last good pair served, as before it, and says so
// in the log once, naming the files and never the key; the next good pair
// is served. Before, a missing file failed every handshake and a bad pair
// was kept without a word, to be found when the old certificate expired.
func TestARenewalThatLeavesNoPairKeepsTheLastOneAndSaysSo(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	goodKey, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	var logs logtest.Buffer
	d := start(t, Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{webhook.New()},
		APIAddr: "127.0.0.1:0", APIToken: testToken, TLSCertFile: certFile, TLSKeyFile: keyFile, Logger: logs.Logger()})
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	served := func(step string) {
		t.Helper()
		for range 2 { // the second handshake tells nothing new
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+d.Addrs.API+"/v1/openapi.json", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := c.Do(req)
			require.NoError(t, err, step)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, step)
		}
	}
	later := time.Now()
	write := func(b []byte) {
		require.NoError(t, os.WriteFile(keyFile, b, 0o600))
		later = later.Add(time.Minute) // a modification time surely new
		require.NoError(t, os.Chtimes(keyFile, later, later))
	}
	_, otherKey, _ := selfSigned(t, t.TempDir())
	other, err := os.ReadFile(otherKey)
	require.NoError(t, err)

	require.NoError(t, os.Remove(keyFile))
	served("the key file removed")
	write([]byte("-----BEGIN PRIVATE KEY-----\nMIIE"))
	served("a half-written key")
	write(other)
	served("another certificate's key")
	for _, want := range []string{"no such file or directory", "failed to find any PEM data in key input", "private key does not match public key"} {
		require.Equal(t, 1, strings.Count(logs.String(), want), "told once: %s\n%s", want, logs.String())
	}
	require.Equal(t, 3, strings.Count(logs.String(), "serving the last good pair"), logs.String())
	require.Contains(t, logs.String(), keyFile)
	require.NotContains(t, logs.String(), string(other[40:80]), "the log shows no key")

	write(goodKey)
	served("the good key back")
	require.Equal(t, 3, strings.Count(logs.String(), "serving the last good pair"), logs.String())
}

// A certificate or key file longer than maxTLSFileBytes is refused naming
// it, having read no more: --tls-cert naming a device (/dev/zero) or a log
// must not fill memory.
func TestATLSFileLongerThanAnyPEMIsRefused(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t, t.TempDir())
	big := filepath.Join(t.TempDir(), "big.pem")
	require.NoError(t, os.WriteFile(big, make([]byte, maxTLSFileBytes+1), 0o600))
	for _, pair := range [][2]string{{big, keyFile}, {certFile, big}} {
		err := LoadTLS(pair[0], pair[1])
		require.ErrorContains(t, err, big)
		require.ErrorContains(t, err, "is longer than")
	}
	require.NoError(t, LoadTLS(certFile, keyFile))
}
