package cloudevents

import (
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
	"github.com/heraldpush/herald/push"
)

// Namespace is the namespace the projection serves.
const Namespace = "cloudevents"

// StructuredContentType is the Content-Type of a structured-mode message
// (CloudEvents JSON format v1.0.2; HTTP binding §3.2.1).
const StructuredContentType = event.ApplicationCloudEventsJSON

var (
	_ push.Projection      = (*Projection)(nil)
	_ push.ConfigValidator = (*Projection)(nil)
)

// Projection turns each record into one CloudEvent, encoded for HTTP by
// sdk-go. It holds no state; one value serves any number of registrations
// concurrently.
type Projection struct{}

// New returns the CloudEvents projection.
func New() *Projection { return &Projection{} }

// Namespace returns "cloudevents".
func (*Projection) Namespace() string { return Namespace }

// Terminal reports rec.Final: a CloudEvents registration ends with its
// stream.
func (*Projection) Terminal(rec journal.Record) bool { return rec.Final }

// ValidateConfig parses reg.Config (see Config). Errors wrap
// journal.ErrInvalid and name the key.
func (*Projection) ValidateConfig(reg push.Registration) error {
	_, err := ParseConfig(reg.Config)
	return err
}

// Messages returns one message for rec: the CloudEvent with id = rec.ID,
// source = config source, type = rec.Kind, subject = rec.Stream, time =
// rec.AppendedAt (omitted when zero), datacontenttype = rec.ContentType and
// data = rec.Payload, in binary content mode (the default) or structured
// content mode, plus "Authorization: Bearer <token>" when the config has a
// token. The message id is rec.ID. The same record and registration give
// byte-identical messages. Errors wrap journal.ErrInvalid: a bad config (it
// names the key) or a record that makes no valid CloudEvent.
func (*Projection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	cfg, err := ParseConfig(reg.Config)
	if err != nil {
		return nil, err
	}
	msg, err := encode(ctx, rec, cfg)
	if err != nil {
		return nil, err
	}
	return []push.Message{msg}, nil
}

// encode builds the event and lets sdk-go's HTTP binding write it into a
// request, from which the message takes its headers and body.
func encode(ctx context.Context, rec journal.Record, cfg Config) (push.Message, error) {
	ct := rec.ContentType
	if ct == "" {
		ct = journal.DefaultContentType
	}
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
		return push.Message{}, journal.Invalid("record", "%s#%d makes no valid CloudEvent: %v", rec.Stream, rec.Seq, err)
	}

	req := &http.Request{Header: http.Header{}}
	if cfg.Structured {
		ctx = binding.WithForceStructured(ctx)
	} else {
		ctx = binding.WithForceBinary(ctx)
	}
	if err := cehttp.WriteRequest(ctx, binding.ToMessage(&e), req); err != nil {
		return push.Message{}, fmt.Errorf("cloudevents: encode %s#%d: %w", rec.Stream, rec.Seq, err)
	}
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return push.Message{}, fmt.Errorf("cloudevents: encode %s#%d: %w", rec.Stream, rec.Seq, err)
		}
		body = b
	}
	contentType := req.Header.Get("Content-Type")
	req.Header.Del("Content-Type")
	if cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	return push.Message{ID: rec.ID, ContentType: contentType, Header: req.Header, Body: body}, nil
}

// needsBase64 says how structured mode carries the payload (JSON format
// v1.0.2 §3.1.1): as a JSON value under "data" when sdk-go recognises the
// type as JSON (application/json, text/json), as a JSON string under "data"
// for text/*, and base64 under "data_base64" otherwise, and always when the
// payload is not UTF-8. Other +json
// types go base64 too: sdk-go would write them as a JSON string, which
// §3.1.1 forbids for JSON content. Binary mode sends the payload as is.
func needsBase64(contentType string, payload []byte) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return true
	}
	switch {
	case !utf8.Valid(payload):
		return true
	case mt == event.ApplicationJSON || mt == event.TextJSON:
		// sdk-go embeds these as a JSON value: only valid JSON may go
		// there (the journal checks text/json payloads for nothing).
		return !json.Valid(payload)
	case strings.HasPrefix(mt, "text/"):
		return false
	default:
		return true
	}
}
