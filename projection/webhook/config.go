package webhook

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/configjson"
	"github.com/heraldpush/herald/push"
)

// Secret format and bounds (Standard Webhooks 1.0.0, "Signature scheme": a
// symmetric signing secret is random, at least 24 bytes and at most 512
// bits, serialized as base64 with the whsec_ prefix).
const (
	SecretPrefix   = "whsec_"
	MinSecretBytes = 24
	MaxSecretBytes = 64
	// MaxSecrets bounds the secrets of one registration. Rotation needs two
	// (the new one and the old one for a while); a few more cover a
	// rotation during a rotation, while every attempt signs once per secret
	// and every signature lengthens the header.
	MaxSecrets = 8
)

// Config is the JSON object a registration of the "webhook" namespace
// carries in push.Registration.Config:
//
//	{"secrets": ["whsec_<base64 of the current key>", "whsec_<base64 of the previous key>"], "envelope": true}
//
// secrets (required) holds 1 to MaxSecrets signing secrets, each "whsec_"
// followed by the standard base64 (RFC 4648 §4, padded) of 24 to 64 random
// bytes. Every message is signed with each of them, in order, so that a
// receiver rotating its secret accepts messages during the change.
// envelope (optional, default false) sends each record in the payload
// structure the specification recommends, {"type", "timestamp", "data"},
// instead of the payload alone (package doc, "Envelope"). Unknown keys are
// an error. Config's String, GoString and Format never print a secret; JSON
// encoding does (it is the stored form).
type Config struct {
	Secrets  []string `json:"secrets"`
	Envelope bool     `json:"envelope,omitempty"`
}

// String describes the config with its secrets redacted.
func (c Config) String() string {
	return fmt.Sprintf("webhook.Config{Secrets: [%d redacted], Envelope: %t}", len(c.Secrets), c.Envelope)
}

// GoString is String: %#v must not print secrets either.
func (c Config) GoString() string { return c.String() }

// Format prints String for every verb (%v, %+v, %#v, %s, %q, …).
func (c Config) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// ParseConfig decodes and validates a registration's config. Errors wrap
// journal.ErrInvalid (as *journal.InvalidError naming the field, e.g.
// "config.secrets[1]"; several problems are joined) and never contain a
// secret.
func ParseConfig(raw push.Config) (Config, error) {
	c, err := decodeConfig(raw)
	if err != nil {
		return Config{}, err
	}
	if _, err := c.keys(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks c as ParseConfig does.
func (c Config) Validate() error {
	_, err := c.keys()
	return err
}

// Encode validates c and returns it as a registration config.
func (c Config) Encode() (push.Config, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("webhook: encode config: %w", err)
	}
	return push.Config(b), nil
}

func decodeConfig(raw []byte) (Config, error) {
	var c Config
	err := configjson.Decode(raw, &c)
	return c, err
}

// parsed is a config as Messages uses it, shared by every message of the
// registrations with this config.
type parsed struct {
	keys     signers
	envelope bool
}

func parse(raw []byte) (parsed, error) {
	c, err := decodeConfig(raw)
	if err != nil {
		return parsed{}, err
	}
	keys, err := c.keys()
	if err != nil {
		return parsed{}, err
	}
	return parsed{keys: keys, envelope: c.Envelope}, nil
}

// signers holds one keyed HMAC-SHA256 per secret, in config order.
type signers []*key

func (c Config) keys() (signers, error) {
	if len(c.Secrets) == 0 {
		return nil, journal.Invalid("config.secrets", "is empty: at least one whsec_ secret is required")
	}
	if len(c.Secrets) > MaxSecrets {
		return nil, journal.Invalid("config.secrets", "has %d secrets, more than %d", len(c.Secrets), MaxSecrets)
	}
	var errs []error
	out := make(signers, 0, len(c.Secrets))
	seen := make(map[string]int, len(c.Secrets))
	for i, s := range c.Secrets {
		field := fmt.Sprintf("config.secrets[%d]", i)
		key, err := decodeSecret(s)
		if err != nil {
			errs = append(errs, journal.Invalid(field, "%s", err))
			continue
		}
		if j, dup := seen[string(key)]; dup {
			errs = append(errs, journal.Invalid(field, "repeats config.secrets[%d]", j))
			continue
		}
		seen[string(key)] = i
		out = append(out, newKey(key))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// decodeSecret returns the key of a whsec_ secret. Its errors describe the
// secret's shape, never its content.
func decodeSecret(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("does not start with %q (a Standard Webhooks secret is whsec_ and base64)", SecretPrefix)
	}
	key, err := base64.StdEncoding.Strict().DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("is not standard, padded base64 after %q", SecretPrefix)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, fmt.Errorf("decodes to %d bytes: a secret's key, decoded, must be %d to %d bytes", len(key), MinSecretBytes, MaxSecretBytes)
	}
	return key, nil
}
