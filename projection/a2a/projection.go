package a2a

import (
	"time"

	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	v1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

const (
	// Namespace is the namespace the projection serves.
	Namespace = "a2a"
	// cacheSize bounds the parsed configs kept, about one a task (tokens
	// are per task); a config may hold 8 KiB of secrets.
	cacheSize = 1024
)

// Protocol versions a registration may ask for (config "version").
const (
	Version10 = "1.0" // the default: the StreamResponse as appended
	Version03 = "0.3" // compatibility: the Task object, v0.3 spellings
)

// Content types of the two versions (A2A 1.0 §14.1.1, A2A 0.3 §9.5).
const (
	ContentType10 = "application/a2a+json"
	ContentType03 = "application/json"
)

// Header names of the token: a2a-go v2's, and A2A 0.3's (v0.3 SDKs').
const (
	TokenHeader       = "A2a-Notification-Token"
	LegacyTokenHeader = "X-A2a-Notification-Token"
)

// MaxSecretBytes bounds the token and the credentials, which go in header
// lines.
const MaxSecretBytes = projconfig.MaxSecretBytes

// Config is an a2a registration's push notification config (A2A 1.0 §4.3.1
// PushNotificationConfig, §4.3.2 AuthenticationInfo), a JSON object in
// push.Registration.Config whose keys are all optional: token goes in both
// token headers; auth_scheme (an RFC 9110 §11.1 auth-scheme such as Bearer)
// and credentials, both or neither, make the Authorization header. Token and
// credentials are secrets of visible ASCII and inner spaces, which String,
// Format and LogValue never show. Unknown keys are an error.
type Config struct {
	Token              string `json:"token,omitempty"`
	AuthScheme         string `json:"auth_scheme,omitempty"`
	Credentials        string `json:"credentials,omitempty"`
	Version            string `json:"version,omitempty"` // Version10 or Version03
	transport.Endpoint        // headers, client_cert, client_key, proxy
}

// ownHeaders are the headers the projection sets, which config.headers may
// not (transport.Endpoint.Check): the token's, and Authorization when it
// sends credentials.
func (c Config) ownHeaders() []string {
	own := []string{TokenHeader, LegacyTokenHeader}
	if c.AuthScheme != "" {
		own = append(own, "Authorization")
	}
	return own
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
	if err := projconfig.HeaderSecret("config.token", c.Token, true); err != nil {
		return err
	}
	switch {
	case c.AuthScheme == "" && c.Credentials != "":
		return journal.Invalid("config.auth_scheme", "is missing: credentials need a scheme such as Bearer or Basic")
	case c.AuthScheme != "" && c.Credentials == "":
		return journal.Invalid("config.credentials", "is missing: auth_scheme %q alone sends no Authorization header; set both or neither", c.AuthScheme)
	case len(c.AuthScheme) > 64:
		return journal.Invalid("config.auth_scheme", "is longer than 64 bytes (%d)", len(c.AuthScheme))
	}
	if i := strings.IndexFunc(c.AuthScheme, func(r rune) bool { return !strings.ContainsRune(tchars, r) }); i >= 0 {
		return journal.Invalid("config.auth_scheme", "%q has a character at byte %d that an HTTP auth-scheme (RFC 9110 §11.1) may not hold", c.AuthScheme, i)
	}
	if err := projconfig.HeaderSecret("config.credentials", c.Credentials, true); err != nil {
		return err
	}
	return c.Endpoint.Check(c.ownHeaders()...)
}

// tchars are the characters of an RFC 9110 §5.6.2 token.
const tchars = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// String describes c without its token or credentials.
func (c Config) String() string {
	return fmt.Sprintf("a2a.Config{Version:%q, AuthScheme:%q, Credentials:%s, Token:%s%s}",
		c.Version, c.AuthScheme, projconfig.Redacted(c.Credentials), projconfig.Redacted(c.Token), c.Endpoint)
}

// Format prints String for every verb (%v, %+v, %#v, %s, %q, …).
func (c Config) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue keeps the secrets out of structured logs, JSON handlers included.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("version", c.Version), slog.String("auth_scheme", c.AuthScheme),
		slog.String("credentials", projconfig.Redacted(c.Credentials)), slog.String("token", projconfig.Redacted(c.Token)))
}

var _ push.Projection = (*Projection)(nil)

// Projection turns records into A2A push notifications, a push.Projection
// and push.ConfigValidator safe for concurrent use.
type Projection struct{ *base }

type base = projconfig.Projection[Config]

// New returns the A2A projection.
func New() *Projection {
	return &Projection{projconfig.New(Namespace, cacheSize, projconfig.Valid[Config])}
}

// Terminal reports whether acknowledging rec ends the registration: rec is
// final or carries a terminal task state (package doc).
func (*Projection) Terminal(rec journal.Record) bool {
	if rec.Final {
		return true
	}
	switch ev, _ := parse(rec.Payload); e := ev.(type) {
	case *v1.Task:
		return e.Status.State.Terminal()
	case *v1.TaskStatusUpdateEvent:
		return e.Status.State.Terminal()
	}
	return false
}

// Messages returns rec's push notification, none for a message in version
// 0.3. Errors wrap journal.ErrInvalid and name the config key or payload
// field at fault.
func (p *Projection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	cfg, err := projconfig.Get(p.base, reg.Config)
	if err != nil {
		return nil, err
	}
	ev, err := parse(rec.Payload)
	if err != nil {
		return nil, err
	}
	msg := push.Message{ID: rec.ID, ContentType: ContentType10, Body: rec.Payload, Header: http.Header{}}
	if cfg.Version == Version03 {
		task := task03(ev)
		if task == nil {
			return nil, nil
		}
		body, err := json.Marshal(task)
		if err != nil {
			return nil, fmt.Errorf("a2a: encode the v0.3 task of %s#%d: %w", rec.Stream, rec.Seq, err)
		}
		msg.ContentType, msg.Body = ContentType03, body
	}
	if cfg.AuthScheme != "" {
		msg.Header.Set("Authorization", cfg.AuthScheme+" "+cfg.Credentials)
	}
	if cfg.Token != "" {
		msg.Header.Set(TokenHeader, cfg.Token)
		msg.Header.Set(LegacyTokenHeader, cfg.Token)
	}
	return []push.Message{msg}, nil
}

// DefaultRetry is the a2a namespace's retry policy (push.RetryDefaulter):
// store.Backoff's delays, parking on the first failure a day after the run's
// first. A push tells a client about a task it started and can poll
// (tasks/get): a client gone a day has most likely moved on, and its parked
// registration keeps every update for an unpark.
func (p *Projection) DefaultRetry() push.RetryPolicy { return push.RetryPolicy{For: 24 * time.Hour} }
