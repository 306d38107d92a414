package cloudevents

import (
	"fmt"
	"log/slog"
	"net/url"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/configjson"
	"github.com/heraldpush/herald/push"
)

// Config is what a cloudevents registration says about its events, parsed
// from push.Registration.Config, a JSON object such as
// {"source": "https://shop.example/orders", "structured": true, "token": "…"}.
// Its keys:
//
//   - "source" (string, required): the CloudEvents source attribute
//     (CloudEvents v1.0.2, "source"): a URI-reference (RFC 3986 §4.1), an
//     absolute URI recommended, at most MaxSourceBytes bytes, no whitespace.
//   - "structured" (bool, default false): send in structured content mode
//     instead of binary content mode (package doc, "Content modes").
//   - "token" (string, optional): a bearer token sent as
//     "Authorization: Bearer <token>" (RFC 6750 §2.1): visible ASCII, no
//     spaces, at most MaxTokenBytes bytes. A secret: String, Format and
//     LogValue never show it.
//
// Unknown keys are an error, so that a misspelt key is not silently ignored.
type Config struct {
	Source     string `json:"source"`
	Structured bool   `json:"structured,omitempty"`
	Token      string `json:"token,omitempty"`
}

// Limits on config values, in bytes.
const (
	MaxSourceBytes = 2048
	// MaxTokenBytes bounds the bearer token: receivers commonly refuse
	// header lines above 8 KiB.
	MaxTokenBytes = 4096
)

// ParseConfig parses and validates a registration's config. Errors wrap
// journal.ErrInvalid and name the key ("config.source", "config.token", …);
// they never repeat the token.
func ParseConfig(raw push.Config) (Config, error) { return configjson.Parse(raw, Config.Validate) }

// Validate checks c as ParseConfig does.
func (c Config) Validate() error {
	if c.Source == "" {
		return journal.Invalid("config.source", "is missing: the CloudEvents source (a URI-reference) is required")
	}
	if len(c.Source) > MaxSourceBytes {
		return journal.Invalid("config.source", "is longer than %d bytes (%d)", MaxSourceBytes, len(c.Source))
	}
	for i := 0; i < len(c.Source); i++ {
		if b := c.Source[i]; b <= ' ' || b == 0x7f {
			return journal.Invalid("config.source", "has a space or control character at byte %d: it must be a URI-reference (RFC 3986)", i)
		}
	}
	if _, err := url.Parse(c.Source); err != nil {
		return journal.Invalid("config.source", "%q is not a URI-reference (RFC 3986)", c.Source)
	}
	if len(c.Token) > MaxTokenBytes {
		return journal.Invalid("config.token", "is longer than %d bytes (%d)", MaxTokenBytes, len(c.Token))
	}
	for i := 0; i < len(c.Token); i++ {
		if b := c.Token[i]; b <= ' ' || b >= 0x7f {
			return journal.Invalid("config.token", "has a character that is not visible ASCII at byte %d: a bearer token is one word of visible ASCII", i)
		}
	}
	return nil
}

// String describes c without its token.
func (c Config) String() string {
	return fmt.Sprintf("cloudevents.Config{Source:%q, Structured:%t, Token:%s}", c.Source, c.Structured, configjson.Redacted(c.Token))
}

// Format prints String for every verb (%v, %+v, %#v, %s, %q, …).
func (c Config) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue keeps the token out of structured logs, JSON handlers included.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("source", c.Source), slog.Bool("structured", c.Structured),
		slog.String("token", configjson.Redacted(c.Token)))
}
