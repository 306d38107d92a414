package cloudevents

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

const (
	// Namespace is the namespace the projection serves.
	Namespace = "cloudevents"
	// cacheSize bounds the parsed configs kept (one per distinct config).
	cacheSize = 1024
)

// StructuredContentType is the Content-Type of a structured-mode message
// (CloudEvents JSON format v1.0.2; HTTP binding §3.2.1).
const StructuredContentType = event.ApplicationCloudEventsJSON

// Config is a cloudevents registration's JSON object in
// push.Registration.Config: source (required) is the CloudEvents source
// attribute, a URI-reference (RFC 3986 §4.1) without whitespace; structured
// chooses structured content mode (package doc); token (optional) is a
// bearer token of visible ASCII, a secret that String, Format and LogValue
// never show. Unknown keys are an error.
type Config struct {
	Source             string `json:"source"`
	Structured         bool   `json:"structured,omitempty"`
	Token              string `json:"token,omitempty"`
	transport.Endpoint        // headers, client_cert, client_key, proxy
}

// ownHeaders are the headers the projection sets, which config.headers may
// not (transport.Endpoint.Check): the binary mode's attributes (HTTP
// binding 1.0.2 §3.1.3), and Authorization when it sends a token.
func (c Config) ownHeaders() []string {
	if c.Token != "" {
		return []string{"Ce-*", "Authorization"}
	}
	return []string{"Ce-*"}
}

// Limits on config values, in bytes.
const (
	MaxSourceBytes = 2048
	MaxTokenBytes  = projconfig.MaxSecretBytes
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
	if err := projconfig.HeaderSecret("config.token", c.Token, false); err != nil {
		return err
	}
	return c.Endpoint.Check(c.ownHeaders()...)
}

// String describes c without its token.
func (c Config) String() string {
	return fmt.Sprintf("cloudevents.Config{Source:%q, Structured:%t, Token:%s%s}", c.Source, c.Structured, projconfig.Redacted(c.Token), c.Endpoint)
}

// Format prints String for every verb (%v, %+v, %#v, %s, %q, …).
func (c Config) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue keeps the token out of structured logs, JSON handlers included.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("source", c.Source), slog.Bool("structured", c.Structured),
		slog.String("token", projconfig.Redacted(c.Token)))
}

var _ push.Projection = (*Projection)(nil)

// Projection turns records into CloudEvents, a push.Projection (Terminal is
// rec.Final) and push.ConfigValidator safe for concurrent use.
type Projection struct{ *base }

type base = projconfig.Projection[Config]

// New returns the CloudEvents projection.
func New() *Projection {
	return &Projection{projconfig.New(Namespace, cacheSize, projconfig.Valid[Config])}
}

// Messages returns the one message for rec (package doc). Errors wrap
// journal.ErrInvalid: a bad config (naming the key) or a record that makes
// no valid CloudEvent.
func (p *Projection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	cfg, err := projconfig.Get(p.base, reg.Config)
	if err != nil {
		return nil, err
	}
	ct := cmp.Or(rec.ContentType, journal.DefaultContentType)
	e := event.New(event.CloudEventsVersionV1)
	e.SetID(rec.ID)
	e.SetSource(cfg.Source)
	e.SetType(rec.Kind)
	e.SetSubject(rec.Stream)
	if !rec.AppendedAt.IsZero() {
		e.SetTime(rec.AppendedAt.UTC())
	}
	e.SetDataContentType(ct)
	e.DataEncoded = rec.Payload
	e.DataBase64 = needsBase64(ct, rec.Payload)
	if err := e.Validate(); err != nil {
		return nil, journal.Invalid("record", "%s#%d makes no valid CloudEvent: %v", rec.Stream, rec.Seq, err)
	}
	req := &http.Request{Header: http.Header{}}
	if cfg.Structured {
		ctx = binding.WithForceStructured(ctx)
	} else {
		ctx = binding.WithForceBinary(ctx)
	}
	err = cehttp.WriteRequest(ctx, binding.ToMessage(&e), req)
	var body []byte
	if err == nil && req.Body != nil {
		body, err = io.ReadAll(req.Body)
	}
	if err != nil {
		return nil, fmt.Errorf("cloudevents: encode %s#%d: %w", rec.Stream, rec.Seq, err)
	}
	contentType := req.Header.Get("Content-Type")
	req.Header.Del("Content-Type")
	for name, vs := range req.Header { // sdk-go writes them raw (cloudevents/sdk-go#1331)
		if strings.HasPrefix(name, "Ce-") {
			for i, v := range vs {
				vs[i] = percentEncode(v)
			}
		}
	}
	if cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	return []push.Message{{ID: rec.ID, ContentType: contentType, Header: req.Header, Body: body}}, nil
}

// percentEncode encodes a ce- header value as HTTP binding §3.1.3.2 says:
// space, '"', '%' and each byte outside printable ASCII (every byte of a
// non-ASCII character's UTF-8) as %XY, upper-case.
func percentEncode(v string) string {
	const hex = "0123456789ABCDEF"
	var b []byte // nil until a byte needs encoding: most values go as they are
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c > ' ' && c < 0x7f && c != '"' && c != '%':
			if b != nil {
				b = append(b, c)
			}
		default:
			if b == nil {
				b = append(make([]byte, 0, len(v)+16), v[:i]...)
			}
			b = append(b, '%', hex[c>>4], hex[c&0xf])
		}
	}
	if b == nil {
		return v
	}
	return string(b)
}

// needsBase64 says whether structured mode carries the payload under
// "data_base64" (package doc).
func needsBase64(contentType string, payload []byte) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return true
	}
	switch {
	case !utf8.Valid(payload):
		return true
	case mt == event.ApplicationJSON || mt == event.TextJSON:
		// embedded as a JSON value; the journal checks text/json for nothing
		return !json.Valid(payload)
	case strings.HasPrefix(mt, "text/"):
		return false
	default:
		return true
	}
}

// DefaultRetry is the cloudevents namespace's retry policy
// (push.RetryDefaulter): the webhook namespace's (webhook.Retry), as the
// CloudEvents HTTP binding's receivers are webhook receivers.
func (p *Projection) DefaultRetry() push.RetryPolicy { return webhook.Retry }
