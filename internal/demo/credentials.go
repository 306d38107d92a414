package demo

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
)

// keyBits is the size of the actors' RSA key: what Mastodon generates, and
// the least the ActivityPub projection accepts.
const keyBits = 2048

// credentials are the secrets one demo run shares between herald's
// registrations and its receivers: fresh every run, never written anywhere
// but the demo's database, never printed. Their String, GoString and Format
// redact them.
type credentials struct {
	key       *rsa.PrivateKey // every demo actor signs with it (a demo shortcut: real actors each have their own)
	keyPEM    string          // PKCS#8
	whsec     string          // Standard Webhooks secret, whsec_…
	ceToken   string          // CloudEvents bearer token
	a2aToken  string          // A2A notification token
	a2aBearer string          // A2A Authorization credentials
}

// newCredentials generates a 2048-bit RSA key (which takes a moment) and
// random tokens.
func newCredentials() (*credentials, error) {
	key, err := rsa.GenerateKey(rand.Reader, keyBits)
	if err != nil {
		return nil, fmt.Errorf("generate the actors' RSA key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode the actors' RSA key: %w", err)
	}
	c := &credentials{key: key, keyPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))}
	raw := make([]byte, 24+16+16+24)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generate tokens: %w", err)
	}
	c.whsec = "whsec_" + base64.StdEncoding.EncodeToString(raw[:24])
	c.ceToken = hex.EncodeToString(raw[24:40])
	c.a2aToken = hex.EncodeToString(raw[40:56])
	c.a2aBearer = hex.EncodeToString(raw[56:])
	return c, nil
}

// String redacts every secret.
func (credentials) String() string {
	return "demo credentials (RSA key, webhook secret and tokens redacted)"
}

// GoString is String.
func (c credentials) GoString() string { return c.String() }

// Format prints String for every verb.
func (c credentials) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }
