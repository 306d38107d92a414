package cloudevents

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/push"
)

// Config is a cloudevents registration's JSON object in
// push.Registration.Config, such as
// {"source": "https://shop.example/orders", "structured": true, "token": "…"}:
// source (required) is the CloudEvents source attribute, a URI-reference
// (RFC 3986 §4.1) without whitespace; structured (default false) chooses
// structured content mode (package doc); token (optional) is a bearer
// token of visible ASCII, a secret that String, Format and LogValue never
// show. Unknown keys are an error.
type Config struct {
	Source     string `json:"source"`
	Structured bool   `json:"structured,omitempty"`
	Token      string `json:"token,omitempty"`
}

// Limits on config values, in bytes; the token goes in a header line, which
// receivers commonly refuse above 8 KiB.
const (
	MaxSourceBytes = 2048
	MaxTokenBytes  = 4096
)

// ParseConfig parses and validates a registration's config. Errors wrap
// journal.ErrInvalid and name the key ("config.source", "config.token", …);
// they never repeat the token.
func ParseConfig(raw push.Config) (Config, error) { return projconfig.Parse(raw, Config.Validate) }

// Validate checks c as ParseConfig does.
func (c Config) Validate() error {
	if c.Source == "" {
		return journal.Invalid("config.source", "is missing: the CloudEvents source (a URI-reference) is required")
	}
	if len(c.Source) > MaxSourceBytes {
		return journal.Invalid("config.source", "is longer than %d bytes (%d)", MaxSourceBytes, len(c.Source))
	}
	if i := strings.IndexFunc(c.Source, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
		return journal.Invalid("config.source", "has a space or control character at byte %d: it must be a URI-reference (RFC 3986)", i)
	}
	if _, err := url.Parse(c.Source); err != nil {
		return journal.Invalid("config.source", "%q is not a URI-reference (RFC 3986)", c.Source)
	}
	if len(c.Token) > MaxTokenBytes {
		return journal.Invalid("config.token", "is longer than %d bytes (%d)", MaxTokenBytes, len(c.Token))
	}
	if i := strings.IndexFunc(c.Token, func(r rune) bool { return r <= ' ' || r >= 0x7f }); i >= 0 {
		return journal.Invalid("config.token", "has a character that is not visible ASCII at byte %d: a bearer token is one word of visible ASCII", i)
	}
	return nil
}

// String describes c without its token.
func (c Config) String() string {
	return fmt.Sprintf("cloudevents.Config{Source:%q, Structured:%t, Token:%s}", c.Source, c.Structured, projconfig.Redacted(c.Token))
}

// Format prints String for every verb (%v, %+v, %#v, %s, %q, …).
func (c Config) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue keeps the token out of structured logs, JSON handlers included.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("source", c.Source), slog.Bool("structured", c.Structured),
		slog.String("token", projconfig.Redacted(c.Token)))
}
