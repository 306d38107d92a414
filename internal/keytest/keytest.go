// Package keytest makes the private keys and certificates that tests use,
// each new and as PKCS #8 PEM where it is PEM. Only tests import it.
package keytest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// PEM is key (an *rsa.PrivateKey, *ecdsa.PrivateKey or ed25519.PrivateKey)
// as a PKCS #8 "PRIVATE KEY" PEM block.
func PEM(tb testing.TB, key any) []byte {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatalf("keytest: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// RSA is a new 2048-bit RSA key and its PEM.
func RSA(tb testing.TB) (*rsa.PrivateKey, []byte) {
	tb.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatalf("keytest: %v", err)
	}
	return key, PEM(tb, key)
}

// Ed25519 is a new Ed25519 key and its PEM.
func Ed25519(tb testing.TB) (ed25519.PrivateKey, []byte) {
	tb.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatalf("keytest: %v", err)
	}
	return key, PEM(tb, key)
}

// ECDSA is a new ECDSA P-256 key and its PEM.
func ECDSA(tb testing.TB) (*ecdsa.PrivateKey, []byte) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("keytest: %v", err)
	}
	return key, PEM(tb, key)
}

// Cert is a certificate and its ECDSA P-256 key, each also as PEM.
type Cert struct {
	*x509.Certificate
	Key             *ecdsa.PrivateKey
	CertPEM, KeyPEM []byte
}

// Issue is the certificate tmpl describes, for a new key, signed by
// parent's key (by its own when parent is nil).
func Issue(tb testing.TB, tmpl *x509.Certificate, parent *Cert) Cert {
	tb.Helper()
	key, keyPEM := ECDSA(tb)
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.Certificate, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		tb.Fatalf("keytest: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("keytest: %v", err)
	}
	return Cert{Certificate: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}
}

// SelfSigned is Issue's certificate signed by its own key, and the key,
// as PEM.
func SelfSigned(tb testing.TB, tmpl *x509.Certificate) (certPEM, keyPEM []byte) {
	tb.Helper()
	c := Issue(tb, tmpl, nil)
	return c.CertPEM, c.KeyPEM
}

// CA is a certificate authority made for a test, and a pool that trusts it.
type CA struct {
	Cert
	Pool *x509.CertPool
}

// NewCA is a new CA, valid for an hour either side of now.
func NewCA(tb testing.TB) *CA {
	tb.Helper()
	now := time.Now()
	c := Issue(tb, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}, nil)
	pool := x509.NewCertPool()
	pool.AddCert(c.Certificate)
	return &CA{Cert: c, Pool: pool}
}

// Leaf is a PEM certificate and key that ca signs for cn, valid from
// notBefore to notAfter: a client's, or with server a server's of
// 127.0.0.1 and example.com.
func (ca *CA) Leaf(tb testing.TB, cn string, server bool, notBefore, notAfter time.Time) (certPEM, keyPEM string) {
	tb.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses, tmpl.DNSNames = []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"example.com"}
	}
	c := Issue(tb, tmpl, &ca.Cert)
	return string(c.CertPEM), string(c.KeyPEM)
}

// RequireClients is the TLS config of a server of 127.0.0.1 and
// example.com, ca's, that requires a client certificate ca signed.
func (ca *CA) RequireClients(tb testing.TB) *tls.Config {
	tb.Helper()
	now := time.Now()
	certPEM, keyPEM := ca.Leaf(tb, "receiver", true, now.Add(-time.Hour), now.Add(time.Hour))
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		tb.Fatalf("keytest: %v", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool}
}
