package activitypub

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// MinKeyBits is the smallest RSA key Config accepts: fediverse servers
// generate 2048-bit keys, and a smaller one is weak or the wrong file.
const MinKeyBits = 2048

// MaxKeyBits is the largest, as a client certificate's key's
// (transport.MaxRSAKeyBits says why).
const MaxKeyBits = transport.MaxRSAKeyBits

// Signature schemes (package doc, "Signatures"), the values of
// Config.SignatureScheme.
const (
	// SchemeRFC9421 is RFC 9421 HTTP Message Signatures with an RFC 9530
	// Content-Digest.
	SchemeRFC9421 = "rfc9421"
	// SchemeCavage is draft-cavage-http-signatures-12 with an RFC 3230
	// Digest, rsa-sha256 only.
	SchemeCavage = "cavage"
)

// Config is the JSON object a registration of the "activitypub" namespace
// carries in push.Registration.Config. key_id (required) is the HTTP
// signature's key id, the absolute http(s) URI of the sending actor's public
// key ("https://example.com/users/alice#main-key"). private_key is the
// actor's key, PEM, not encrypted (left out, key_id names a key held once
// in the store: package doc, "Keys held once", and WithKeys): RSA (PKCS#1 or PKCS#8,
// MinKeyBits to MaxKeyBits bits) or Ed25519 (PKCS#8). signature_scheme pins the scheme,
// "rfc9421" or "cavage" (RSA only), or is left out (package doc, "Signatures").
//
// proof_key_id, when set, adds a FEP-8b32 Object Integrity Proof to every
// activity sent, with that verificationMethod (the id of the actor's
// Ed25519 Multikey); proof_private_key is that key, PKCS#8 PEM, and may be
// left out when private_key is the same Ed25519 key (package doc, "Object
// integrity proofs").
//
// actors are the ids of the actors the inbox serves, and followers (only
// with actors) the sending actor's followers collections they are members
// of (package doc, "Which inbox gets what"). Unknown keys are an error. Only
// JSON encoding shows the private keys.
type Config struct {
	KeyID              string   `json:"key_id"`
	PrivateKey         string   `json:"private_key"`
	SignatureScheme    string   `json:"signature_scheme,omitempty"`
	ProofKeyID         string   `json:"proof_key_id,omitempty"`
	ProofPrivateKey    string   `json:"proof_private_key,omitempty"`
	Actors             []string `json:"actors,omitempty"`
	Followers          []string `json:"followers,omitempty"`
	transport.Endpoint          // headers, client_cert, client_key, proxy
}

// ownHeaders are the headers the projection sets, which config.headers may
// not (transport.Endpoint.Check): the signature's, both drafts.
var ownHeaders = []string{"Date", "Digest", "Signature", "Signature-Input", "Content-Digest"}

// String describes the config with the private keys redacted.
func (c Config) String() string {
	redacted := func(k string) string {
		if k == "" {
			return "<none>"
		}
		return fmt.Sprintf("[redacted, %d bytes]", len(k))
	}
	return fmt.Sprintf("activitypub.Config{KeyID: %q, PrivateKey: %s, SignatureScheme: %q, ProofKeyID: %q, ProofPrivateKey: %s, Actors: %q, Followers: %q%s}",
		c.KeyID, redacted(c.PrivateKey), c.SignatureScheme, c.ProofKeyID, redacted(c.ProofPrivateKey), c.Actors, c.Followers, c.Endpoint)
}

// Format prints String for every verb (%v, %+v, %#v, %s, %q, …).
func (c Config) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue is String, so that no slog handler (JSON's encodes the struct)
// logs a secret.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// SchemeAuto is what ShownScheme says of a registration pinning no scheme.
const SchemeAuto = "auto"

// ShownScheme is the signature scheme a registration's config pins, or
// SchemeAuto, read without parsing its keys (an operator's view); a config
// that does not decode shows SchemeAuto.
func ShownScheme(raw push.Config) string {
	var c struct {
		Scheme string `json:"signature_scheme"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Scheme == "" {
		return SchemeAuto
	}
	return c.Scheme
}

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
	http      Key             // signs the HTTP request
	schemes   []string        // tried in order (Signer.Schemes)
	proof     *Key            // signs a FEP-8b32 proof, if set
	scheme    string          // the pinned scheme, "" for none: a held key's schemes
	actors    map[string]bool // nil: deliver everything
	followers map[string]bool
}

func (c Config) settings() (*settings, error) {
	errs := []error{checkKeyID("key_id", c.KeyID), c.Endpoint.Check(ownHeaders...)}
	var key crypto.Signer
	if c.PrivateKey != "" { // else a held key, by key_id (Projection.ValidateConfig)
		var err error
		if key, err = parsePrivateKey(c.PrivateKey); err != nil {
			errs = append(errs, journal.Invalid("config.private_key", "%s", err))
		}
	}
	s := &settings{http: Key{ID: c.KeyID, Signer: key}, scheme: c.SignatureScheme}
	if key == nil && c.SignatureScheme != "" && c.SignatureScheme != SchemeRFC9421 && c.SignatureScheme != SchemeCavage {
		errs = append(errs, journal.Invalid("config.signature_scheme", "is %q: it must be %q, %q, or left out", c.SignatureScheme, SchemeRFC9421, SchemeCavage))
	}
	if key != nil {
		var err error
		if s.schemes, err = Schemes(key, c.SignatureScheme); err != nil {
			errs = append(errs, journal.Invalid("config.signature_scheme", "%s", err))
		}
	}
	switch {
	case c.ProofKeyID == "" && c.ProofPrivateKey != "":
		errs = append(errs, journal.Invalid("config.proof_private_key", "needs proof_key_id, the id of the Multikey it is"))
	case c.ProofKeyID != "":
		errs = append(errs, checkURI("proof_key_id", c.ProofKeyID))
		proofKey, field := key, "config.private_key"
		if c.ProofPrivateKey != "" {
			var err error
			field = "config.proof_private_key"
			if proofKey, err = parsePrivateKey(c.ProofPrivateKey); err != nil {
				errs = append(errs, journal.Invalid(field, "%s", err))
			}
		}
		if proofKey != nil {
			if _, ok := proofKey.Public().(ed25519.PublicKey); !ok {
				errs = append(errs, journal.Invalid(field, "is an RSA key: a proof (eddsa-jcs-2022) needs the actor's Ed25519 key; give it as proof_private_key"))
			}
			s.proof = &Key{ID: c.ProofKeyID, Signer: proofKey}
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
	s.actors, s.followers = set("actors", c.Actors), set("followers", c.Followers)
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

// checkKeyID is checkURI of a signature's key id, which a header carries
// quoted (RFC 9421's keyid is an RFC 8941 string; draft-cavage's keyId
// has no escapes): visible ASCII but '"' and '\'. Non-ASCII was taken,
// and every signature then failed.
func checkKeyID(field, s string) error {
	if err := checkURI(field, s); err != nil {
		return err
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '"' || r == '\\' }); i >= 0 {
		return journal.Invalid("config."+field, "has %U at byte %d: a key id is sent in a header, as visible ASCII without '\"' or '\\' (percent-encode the rest)", []rune(s[i:])[0], i)
	}
	return nil
}

// Key is an actor's private key and the id its public key is published
// under: what signs a request or a proof. Signer is an *rsa.PrivateKey or
// an ed25519.PrivateKey (what parsePrivateKey returns); RFC 9421 and proofs
// sign through the crypto.Signer interface alone, draft-cavage needs the
// *rsa.PrivateKey.
type Key struct {
	ID     string
	Signer crypto.Signer
}

// Schemes returns the signature schemes key signs a delivery with, in the
// order tried, for a registration pinning scheme ("" for none; package doc,
// "Signatures").
func Schemes(key crypto.Signer, scheme string) ([]string, error) {
	_, isRSA := key.(*rsa.PrivateKey)
	switch scheme {
	case "":
		if isRSA {
			return []string{SchemeRFC9421, SchemeCavage}, nil
		}
		return []string{SchemeRFC9421}, nil
	case SchemeRFC9421:
		return []string{SchemeRFC9421}, nil
	case SchemeCavage:
		if !isRSA {
			return nil, errors.New(`is "cavage", which fediverse servers verify with RSA keys only, and private_key is Ed25519: pin "rfc9421" or leave it out`)
		}
		return []string{SchemeCavage}, nil
	}
	return nil, fmt.Errorf("is %q: it must be %q, %q, or left out (RFC 9421 first, draft-cavage on refusal)", scheme, SchemeRFC9421, SchemeCavage)
}

// parsePrivateKey reads an RSA or Ed25519 private key from PEM; its errors
// never show the key.
func parsePrivateKey(pemText string) (crypto.Signer, error) {
	if pemText == "" {
		return nil, errors.New("is required (PEM: RSA, PKCS#1 or PKCS#8; or Ed25519, PKCS#8)")
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
		return nil, fmt.Errorf("is a PEM %q block that does not parse as an RSA or Ed25519 private key", block.Type)
	}
	if ed, ok := key.(ed25519.PrivateKey); ok {
		return ed, nil
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("is a %s key: HTTP signatures need an RSA or Ed25519 key", keyKind(key))
	}
	if bits := rsaKey.N.BitLen(); bits < MinKeyBits || bits > MaxKeyBits {
		return nil, fmt.Errorf("is an RSA key of %d bits: %d to %d bits are required", bits, MinKeyBits, MaxKeyBits)
	}
	return rsaKey, nil
}

func keyKind(key any) string {
	switch key.(type) {
	case *ecdsa.PrivateKey:
		return "ECDSA"
	case *ecdh.PrivateKey:
		return "ECDH"
	}
	return "non-RSA"
}
