package activitypub

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/push"
)

// MinKeyBits is the smallest RSA key Config accepts: fediverse servers
// generate 2048-bit keys, and a smaller one is weak or the wrong file.
const MinKeyBits = 2048

// Config is the JSON object a registration of the "activitypub" namespace
// carries in push.Registration.Config. key_id (required) is the signature's
// keyId, the absolute http(s) URI of the sending actor's public key
// ("https://example.com/users/alice#main-key"). private_key is the actor's
// RSA key, PEM, PKCS#1 or PKCS#8, at least MinKeyBits bits, not encrypted;
// left out, key_id names a key held once in the store (package doc, "Keys
// held once"), which the projection must have (WithKeys). actors are the ids of the actors the inbox serves, and
// followers (only with actors) the sending actor's followers collections
// they are members of (package doc, "Which inbox gets what"). Unknown keys
// are an error. Only JSON encoding shows the private key.
type Config struct {
	KeyID      string   `json:"key_id"`
	PrivateKey string   `json:"private_key"`
	Actors     []string `json:"actors,omitempty"`
	Followers  []string `json:"followers,omitempty"`
}

// String describes the config with the private key redacted.
func (c Config) String() string {
	key := "<none>"
	if c.PrivateKey != "" {
		key = fmt.Sprintf("[redacted, %d bytes]", len(c.PrivateKey))
	}
	return fmt.Sprintf("activitypub.Config{KeyID: %q, PrivateKey: %s, Actors: %q, Followers: %q}", c.KeyID, key, c.Actors, c.Followers)
}

// Format prints String for every verb (%v, %+v, %#v, %s, %q, …).
func (c Config) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue is String, so that no slog handler (JSON's encodes the struct)
// logs a secret.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// ParseConfig decodes and validates a registration's config. Errors wrap
// journal.ErrInvalid, name the field ("config.private_key"), are joined when
// several, and never contain the private key.
func ParseConfig(raw push.Config) (Config, error) { return projconfig.Parse(raw, Config.Validate) }

// Validate checks c as ParseConfig does.
func (c Config) Validate() error {
	_, err := c.settings()
	return err
}

// Encode validates c and returns it as a registration config.
func (c Config) Encode() (push.Config, error) { return projconfig.Encode(c, Config.Validate) }

// settings is a parsed config, shared and never written.
type settings struct {
	keyID     string
	key       *rsa.PrivateKey // nil: held by key id (KeySource)
	actors    map[string]bool // nil: deliver everything
	followers map[string]bool
}

func (c Config) settings() (*settings, error) {
	errs := []error{checkURI("key_id", c.KeyID)}
	var key *rsa.PrivateKey
	if c.PrivateKey != "" { // else a held key, by key_id (Projection.ValidateConfig)
		var err error
		if key, err = parsePrivateKey(c.PrivateKey); err != nil {
			errs = append(errs, journal.Invalid("config.private_key", "%s", err))
		}
	}
	set := func(field string, ids []string) map[string]bool {
		if ids == nil {
			return nil
		}
		if len(ids) == 0 {
			errs = append(errs, journal.Invalid("config."+field, "is an empty list: leave it out to deliver everything"))
		}
		m := make(map[string]bool, len(ids))
		for i, id := range ids {
			errs = append(errs, checkURI(fmt.Sprintf("%s[%d]", field, i), id))
			m[id] = true
		}
		return m
	}
	s := &settings{keyID: c.KeyID, key: key, actors: set("actors", c.Actors), followers: set("followers", c.Followers)}
	if c.Followers != nil && c.Actors == nil {
		errs = append(errs, journal.Invalid("config.followers", "needs actors: without actors every activity is delivered and followers would be ignored"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// checkURI accepts an absolute http(s) URI with a host, as fediverse ids
// are.
func checkURI(field, s string) error {
	if s == "" {
		return journal.Invalid("config."+field, "is required (an absolute http or https URI)")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return journal.Invalid("config."+field, "%q is not an absolute http or https URI", s)
	}
	return nil
}

// parsePrivateKey reads an RSA private key from PEM; its errors never show
// the key.
func parsePrivateKey(pemText string) (*rsa.PrivateKey, error) {
	if pemText == "" {
		return nil, errors.New("is required (PEM, PKCS#1 or PKCS#8 RSA)")
	}
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, errors.New("is not PEM: expected -----BEGIN PRIVATE KEY----- (PKCS#8) or -----BEGIN RSA PRIVATE KEY----- (PKCS#1)")
	}
	if _, encrypted := block.Headers["Proc-Type"]; encrypted || block.Type == "ENCRYPTED PRIVATE KEY" {
		return nil, errors.New("is encrypted: store the decrypted key")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "PUBLIC KEY", "RSA PUBLIC KEY", "CERTIFICATE":
		return nil, fmt.Errorf("is a PEM %q block: the private key is required", block.Type)
	default:
		return nil, fmt.Errorf("is a PEM %q block: expected PRIVATE KEY (PKCS#8) or RSA PRIVATE KEY (PKCS#1)", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("is a PEM %q block that does not parse as an RSA private key", block.Type)
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("is a %s key: rsa-sha256 HTTP signatures need an RSA key", keyKind(key))
	}
	if bits := rsaKey.N.BitLen(); bits < MinKeyBits {
		return nil, fmt.Errorf("is a %d-bit RSA key: at least %d bits are required", bits, MinKeyBits)
	}
	return rsaKey, nil
}

func keyKind(key any) string {
	switch key.(type) {
	case *ecdsa.PrivateKey:
		return "ECDSA"
	case ed25519.PrivateKey:
		return "Ed25519"
	case *ecdh.PrivateKey:
		return "ECDH"
	}
	return "non-RSA"
}
