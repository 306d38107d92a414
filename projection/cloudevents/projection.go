package cloudevents

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/push"
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

var _ push.Projection = (*Projection)(nil)

// Projection turns records into CloudEvents, a push.Projection (Terminal is
// rec.Final) and push.ConfigValidator safe for concurrent use.
type Projection struct{ *base }

type base = projconfig.Projection[Config]

// New returns the CloudEvents projection.
func New() *Projection {
	return &Projection{projconfig.New(Namespace, cacheSize, func(c Config) (Config, error) { return c, c.Validate() })}
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
	if cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	return []push.Message{{ID: rec.ID, ContentType: contentType, Header: req.Header, Body: body}}, nil
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
