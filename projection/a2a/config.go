package a2a

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/push"
)

// Protocol versions a registration may ask for (config "version").
const (
	Version10 = "1.0" // the default: the StreamResponse as appended
	Version03 = "0.3" // compatibility: the Task object, v0.3 spellings
)

// MaxSecretBytes bounds the token and the credentials, which go in header
// lines (receivers commonly refuse those above 8 KiB).
const MaxSecretBytes = 4096

// Config is an a2a registration's push notification config (A2A 1.0 §4.3.1
// PushNotificationConfig, §4.3.2 AuthenticationInfo), the JSON object
// {"token": "…", "auth_scheme": "Bearer", "credentials": "…", "version": "1.0"}
// in push.Registration.Config. Every key is optional: token goes in both
// token headers; auth_scheme (an RFC 9110 token such as Bearer or Basic)
// and credentials, both or neither, make the Authorization header; version
// is Version10 or Version03. Token and credentials are secrets of visible
// ASCII and inner spaces, which String, Format and LogValue never show.
// Unknown keys are an error.
type Config struct {
	Token       string `json:"token,omitempty"`
	AuthScheme  string `json:"auth_scheme,omitempty"`
	Credentials string `json:"credentials,omitempty"`
	Version     string `json:"version,omitempty"`
}

// ParseConfig decodes and validates a registration's config. Errors wrap
// journal.ErrInvalid, name the key ("config.token") and repeat no secret.
func ParseConfig(raw push.Config) (Config, error) { return projconfig.Parse(raw, Config.Validate) }

// Validate checks c as ParseConfig does.
func (c Config) Validate() error {
	switch c.Version {
	case "", Version10, Version03:
	default:
		return journal.Invalid("config.version", "%q must be %q (the default) or %q", c.Version, Version10, Version03)
	}
	if err := headerSafe("config.token", c.Token); err != nil {
		return err
	}
	switch {
	case c.AuthScheme == "" && c.Credentials != "":
		return journal.Invalid("config.auth_scheme", "is missing: credentials need a scheme such as Bearer or Basic")
	case c.AuthScheme != "" && c.Credentials == "":
		return journal.Invalid("config.credentials", "is missing: auth_scheme %q alone sends no Authorization header; set both or neither", c.AuthScheme)
	}
	if len(c.AuthScheme) > 64 {
		return journal.Invalid("config.auth_scheme", "is longer than 64 bytes (%d)", len(c.AuthScheme))
	}
	if i := strings.IndexFunc(c.AuthScheme, func(r rune) bool { return !strings.ContainsRune(tchars, r) }); i >= 0 {
		return journal.Invalid("config.auth_scheme", "%q has a character at byte %d that an HTTP auth-scheme (RFC 9110 §11.1) may not hold", c.AuthScheme, i)
	}
	return headerSafe("config.credentials", c.Credentials)
}

// headerSafe checks a secret for a header value; its errors never quote it.
func headerSafe(field, s string) error {
	if len(s) > MaxSecretBytes {
		return journal.Invalid(field, "is longer than %d bytes (%d)", MaxSecretBytes, len(s))
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < ' ' || r >= 0x7f }); i >= 0 {
		return journal.Invalid(field, "has a character that is not visible ASCII at byte %d", i)
	}
	if strings.TrimSpace(s) != s {
		return journal.Invalid(field, "starts or ends with a space, which receivers strip")
	}
	return nil
}

// tchars are the characters of an RFC 9110 §5.6.2 token.
const tchars = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// String describes c without its token or credentials.
func (c Config) String() string {
	return fmt.Sprintf("a2a.Config{Version:%q, AuthScheme:%q, Credentials:%s, Token:%s}",
		c.Version, c.AuthScheme, projconfig.Redacted(c.Credentials), projconfig.Redacted(c.Token))
}

// Format prints String for every verb (%v, %+v, %#v, %s, %q, …).
func (c Config) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue keeps the secrets out of structured logs, JSON handlers included.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("version", c.Version), slog.String("auth_scheme", c.AuthScheme),
		slog.String("credentials", projconfig.Redacted(c.Credentials)), slog.String("token", projconfig.Redacted(c.Token)))
}
