package webhook

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/push"
)

// Secret format and bounds, in bytes of the decoded key ("Signature
// scheme": 24 bytes to 512 bits). Rotation needs two secrets; MaxSecrets
// allows a rotation during a rotation, while each costs a signature.
const (
	SecretPrefix   = "whsec_"
	MinSecretBytes = 24
	MaxSecretBytes = 64
	MaxSecrets     = 8
)

// Config is the JSON object a registration of the "webhook" namespace
// carries in push.Registration.Config. secrets (required) holds 1 to
// MaxSecrets secrets, each SecretPrefix and the standard, padded base64 of
// a key; every message is signed with each, so that a receiver rotates its
// secret without downtime. envelope sends the envelope (package doc).
// Unknown keys are an error. Only JSON encoding shows a secret.
type Config struct {
	Secrets  []string `json:"secrets"`
	Envelope bool     `json:"envelope,omitempty"`
}

// String describes the config with its secrets redacted.
func (c Config) String() string {
	return fmt.Sprintf("webhook.Config{Secrets: [%d redacted], Envelope: %t}", len(c.Secrets), c.Envelope)
}

// Format prints String for every verb (%v, %+v, %#v, %s, %q, …).
func (c Config) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue is String, so that no slog handler (JSON's encodes the struct)
// logs a secret.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// ParseConfig decodes and validates a registration's config. Errors wrap
// journal.ErrInvalid, name the field ("config.secrets[1]"), are joined when
// several, and never contain a secret.
func ParseConfig(raw push.Config) (Config, error) { return projconfig.Parse(raw, Config.Validate) }

// Validate checks c as ParseConfig does.
func (c Config) Validate() error {
	_, err := c.parsed()
	return err
}

// Encode validates c and returns it as a registration config.
func (c Config) Encode() (push.Config, error) { return projconfig.Encode(c, Config.Validate) }

// parsed is a config as Messages uses it: one keyed HMAC a secret.
type parsed struct {
	keys     []*key
	envelope bool
}

func (c Config) parsed() (parsed, error) {
	if len(c.Secrets) == 0 {
		return parsed{}, journal.Invalid("config.secrets", "is empty: at least one whsec_ secret is required")
	}
	if len(c.Secrets) > MaxSecrets {
		return parsed{}, journal.Invalid("config.secrets", "has %d secrets, more than %d", len(c.Secrets), MaxSecrets)
	}
	var errs []error
	out := parsed{keys: make([]*key, 0, len(c.Secrets)), envelope: c.Envelope}
	seen := make(map[string]int, len(c.Secrets))
	for i, s := range c.Secrets {
		field := fmt.Sprintf("config.secrets[%d]", i)
		secret, err := decodeSecret(s)
		if err != nil {
			errs = append(errs, journal.Invalid(field, "%s", err))
			continue
		}
		if j, dup := seen[string(secret)]; dup {
			errs = append(errs, journal.Invalid(field, "repeats config.secrets[%d]", j))
			continue
		}
		seen[string(secret)] = i
		out.keys = append(out.keys, newKey(secret))
	}
	return out, errors.Join(errs...)
}

// decodeSecret returns the key of a whsec_ secret. Its errors never show it.
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
