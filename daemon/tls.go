package daemon

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/heraldpush/herald/daemon/internal/web"
	"github.com/heraldpush/herald/journal"
)

// NeedsTLS reports whether an address (host:port; empty: off) would be
// reached over a network: its host is not a loopback address (an empty host
// is every interface). Such an address must serve TLS, or be reached only
// through a proxy that terminates it (Options.TLSTerminatedByProxy), for
// the token and the page's cookie never to cross a network in clear.
func NeedsTLS(addr string) bool {
	if addr == "" {
		return false
	}
	host, _, err := net.SplitHostPort(addr)
	return err != nil || host == "" || !web.LoopbackHost(host)
}

// LoadTLS reports whether the PEM certificate and key files load as a
// pair; the error names the files, never the key.
func LoadTLS(certFile, keyFile string) error {
	_, err := (&certFiles{cert: certFile, key: keyFile}).get()
	return err
}

// checkTLS refuses a TLS option without its pair, a certificate that does
// not load, and an address off loopback in clear; it returns the
// certificate source when TLS is on.
func checkTLS(opts Options) (*certFiles, error) {
	var certs *certFiles
	switch {
	case (opts.TLSCertFile == "") != (opts.TLSKeyFile == ""):
		return nil, errors.New("Options.TLSCertFile and Options.TLSKeyFile (herald run --tls-cert, --tls-key) go together: give both or neither")
	case opts.TLSCertFile != "":
		certs = &certFiles{cert: opts.TLSCertFile, key: opts.TLSKeyFile}
		if _, err := certs.get(); err != nil {
			return nil, err
		}
	}
	for _, a := range []struct{ field, addr string }{{"Options.MetricsAddr", opts.MetricsAddr}, {"Options.AdminAddr", opts.AdminAddr}, {"Options.APIAddr", opts.APIAddr}} {
		if certs == nil && !opts.TLSTerminatedByProxy && NeedsTLS(a.addr) {
			return nil, fmt.Errorf("%s %s is not a loopback address: tokens and cookies would cross the network in clear; "+
				"serve it with TLS (Options.TLSCertFile and TLSKeyFile; herald run --tls-cert and --tls-key), or, if only a proxy that terminates TLS "+
				"reaches it, say so (Options.TLSTerminatedByProxy; --tls-terminated-by-proxy)", a.field, journal.Shown(a.addr))
		}
	}
	return certs, nil
}

// certFiles serves the key pair in two PEM files, loaded again when either
// file changes, so that a renewed certificate is served from the next
// handshake without a restart.
type certFiles struct {
	cert, key string
	warn      func(error) // told once of each failure that keeps the last good pair

	mu            sync.Mutex
	loaded        *tls.Certificate
	certAt, keyAt time.Time
	told          string // the failure told last; "" once a pair loads
}

// get returns the key pair, loading it again when a file's modification
// time changed. Errors name the files and never the key.
func (c *certFiles) get() (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ci, err1 := os.Stat(c.cert)
	ki, err2 := os.Stat(c.key)
	if err := errors.Join(err1, err2); err != nil {
		return c.keep(fmt.Errorf("TLS: %w", err))
	}
	if c.loaded != nil && ci.ModTime().Equal(c.certAt) && ki.ModTime().Equal(c.keyAt) {
		return c.loaded, nil
	}
	pair, err := loadPair(c.cert, c.key)
	if err != nil {
		return c.keep(fmt.Errorf("TLS certificate %s and key %s: %w", c.cert, c.key, err))
	}
	c.loaded, c.certAt, c.keyAt, c.told = &pair, ci.ModTime(), ki.ModTime(), ""
	return c.loaded, nil
}

// keep answers err with the last good pair, if any: a renewal half done
// (a file removed or half-written) must not fail every handshake, nor one
// gone wrong pass unnoticed until the old certificate expires.
func (c *certFiles) keep(err error) (*tls.Certificate, error) {
	if c.loaded == nil {
		return nil, err
	}
	if c.warn != nil && err.Error() != c.told {
		c.told = err.Error()
		c.warn(err)
	}
	return c.loaded, nil
}

// maxTLSFileBytes bounds a certificate or key file: a chain is a few KiB,
// and a device named by mistake (/dev/zero) must not fill memory.
const maxTLSFileBytes = 1 << 20

// loadPair is tls.LoadX509KeyPair with each file read to maxTLSFileBytes.
func loadPair(certFile, keyFile string) (tls.Certificate, error) {
	var pem [2][]byte
	for i, name := range []string{certFile, keyFile} {
		f, err := os.Open(name)
		if err != nil {
			return tls.Certificate{}, err
		}
		pem[i], err = io.ReadAll(io.LimitReader(f, maxTLSFileBytes+1))
		f.Close()
		switch {
		case err != nil:
			return tls.Certificate{}, err
		case len(pem[i]) > maxTLSFileBytes:
			return tls.Certificate{}, fmt.Errorf("%s is longer than %d bytes: not a PEM file", name, maxTLSFileBytes)
		}
	}
	return tls.X509KeyPair(pem[0], pem[1])
}

// config is the servers' TLS configuration over c: TLS 1.2 at least.
func (c *certFiles) config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.get() }}
}
