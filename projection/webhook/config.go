package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
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
// carries in push.Registration.Config. secrets (required) holds 1 or more
// secrets, each SecretPrefix and the standard, padded base64 of a key;
// every message is signed with each, so that a receiver rotates its secret
// without downtime. retiring holds old secrets that sign only until their
// instant (Rotate); secrets and retiring hold at most MaxSecrets together.
// envelope sends the envelope (package doc). Unknown keys are an error.
// Only JSON encoding shows a secret.
type Config struct {
	Secrets            []string   `json:"secrets"`
	Retiring           []Retiring `json:"retiring,omitempty"`
	Envelope           bool       `json:"envelope,omitempty"`
	transport.Endpoint            // headers, client_cert, client_key, proxy
}

// Retiring is a secret that signs a message only when its attempt's
// instant (the sweep's at, never the wall clock) is before Until.
type Retiring struct {
	Secret string    `json:"secret"`
	Until  time.Time `json:"until"`
}

// ownHeaders are the headers the projection sets, which config.headers may
// not (transport.Endpoint.Check); the Herald- ones are reserved for all.
var ownHeaders = []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"}

// String describes the config with its secrets redacted.
func (c Config) String() string {
	retiring := ""
	if len(c.Retiring) > 0 {
		retiring = fmt.Sprintf(", Retiring: [%d redacted]", len(c.Retiring))
	}
	return fmt.Sprintf("webhook.Config{Secrets: [%d redacted]%s, Envelope: %t%s}", len(c.Secrets), retiring, c.Envelope, c.Endpoint)
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
	if n := len(c.Secrets) + len(c.Retiring); n > MaxSecrets {
		return parsed{}, journal.Invalid("config.secrets", "has %d secrets with retiring, more than %d", n, MaxSecrets)
	}
	errs := []error{c.Endpoint.Check(ownHeaders...)}
	out := parsed{keys: make([]*key, 0, len(c.Secrets)+len(c.Retiring)), envelope: c.Envelope}
	seen := make(map[string]string, len(c.Secrets)+len(c.Retiring))
	add := func(field, s string, until time.Time) {
		secret, err := decodeSecret(s)
		if err != nil {
			errs = append(errs, journal.Invalid(field, "%s", err))
			return
		}
		if other, dup := seen[string(secret)]; dup {
			errs = append(errs, journal.Invalid(field, "repeats %s", other))
			return
		}
		seen[string(secret)] = field
		k := newKey(secret)
		k.until = until
		out.keys = append(out.keys, k)
	}
	for i, s := range c.Secrets {
		add(fmt.Sprintf("config.secrets[%d]", i), s, time.Time{})
	}
	for i, r := range c.Retiring {
		field := fmt.Sprintf("config.retiring[%d]", i)
		if r.Until.IsZero() {
			errs = append(errs, journal.Invalid(field+".until", "is missing: a retiring secret signs until this instant (RFC 3339)"))
			continue
		}
		add(field+".secret", r.Secret, r.Until)
	}
	return out, errors.Join(errs...)
}

// NewSecret returns a new secret: SecretPrefix and 32 bytes from
// crypto/rand, base64.
func NewSecret() string {
	var key [32]byte
	_, _ = rand.Read(key[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key[:])
}

// MaxExpireOld bounds how long Rotate keeps the old secrets signing: a
// receiver that has not taken the new one in a month will not.
const MaxExpireOld = 30 * 24 * time.Hour

// Rotate returns c with a new secret (NewSecret) in place of its secrets,
// which keep signing, as retiring, until now+expireOld (0: they stop at
// once), and the new secret. Retiring secrets already past now are
// dropped. now is the caller's instant, which decides Until; whether a
// retiring secret signs is judged at each attempt's at. Errors wrap
// journal.ErrInvalid ("expire_old", or "config.secrets" when too many
// would be kept) and change nothing.
func (c Config) Rotate(now time.Time, expireOld time.Duration) (Config, string, error) {
	if expireOld < 0 || expireOld > MaxExpireOld {
		return c, "", journal.Invalid("expire_old", "is %v: it must be from 0 (the old secrets stop at once) to %v", expireOld, MaxExpireOld)
	}
	if err := c.Validate(); err != nil {
		return c, "", err
	}
	out := c
	out.Retiring = nil
	for _, r := range c.Retiring {
		if now.Before(r.Until) {
			out.Retiring = append(out.Retiring, r)
		}
	}
	if expireOld > 0 {
		for _, s := range c.Secrets {
			out.Retiring = append(out.Retiring, Retiring{Secret: s, Until: now.Add(expireOld).UTC()})
		}
	}
	if n := 1 + len(out.Retiring); n > MaxSecrets {
		return c, "", journal.Invalid("config.secrets", "would hold %d secrets with the retiring ones, more than %d: rotate again after %s, or with expire_old 0",
			n, MaxSecrets, out.Retiring[0].Until.Format(time.RFC3339))
	}
	secret := NewSecret()
	out.Secrets = []string{secret}
	return out, secret, nil
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
