package webhook

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/configcache"
	"github.com/heraldpush/herald/push"
)

const (
	// Namespace is the namespace this projection serves.
	Namespace = "webhook"
	// cacheSize bounds the parsed configs kept (one per distinct config;
	// secrets are unique per endpoint, so one per registration).
	cacheSize = 4096
)

var (
	_ push.Projection      = (*Projection)(nil)
	_ push.ConfigValidator = (*Projection)(nil)
)

// Projection delivers records as Standard Webhooks. It is safe for
// concurrent use.
type Projection struct {
	configs *configcache.Cache[parsed]
}

// New returns a Standard Webhooks projection.
func New() *Projection {
	return &Projection{configs: configcache.New(cacheSize, parse)}
}

// Namespace returns "webhook".
func (p *Projection) Namespace() string { return Namespace }

// Terminal reports rec.Final.
func (p *Projection) Terminal(rec journal.Record) bool { return rec.Final }

// ValidateConfig checks reg.Config as ParseConfig does. Errors wrap
// journal.ErrInvalid, name the field, and never contain a secret.
func (p *Projection) ValidateConfig(reg push.Registration) error {
	_, err := p.configs.Get(reg.Config)
	return err
}

// Messages returns the one message that delivers rec: id rec.ID (the
// webhook-id, stable across retries), Content-Type rec.ContentType
// (journal.DefaultContentType when empty), body the payload as appended,
// or, with the config's envelope, application/json and the envelope
// (package doc, "Envelope"); the headers HeaderKind, HeaderStream and
// HeaderSeq; and a signer that adds webhook-id, webhook-timestamp and
// webhook-signature at send time. Errors wrap journal.ErrInvalid: a bad
// config.
func (p *Projection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	cfg, err := p.configs.Get(reg.Config)
	if err != nil {
		return nil, fmt.Errorf("webhook: registration %s: %w", push.Name(reg.Stream, reg.ID), err)
	}
	ct := rec.ContentType
	if ct == "" {
		ct = journal.DefaultContentType
	}
	body := rec.Payload
	if cfg.envelope {
		body, ct = envelope(rec, ct), envelopeContentType
	}
	// One allocation for the slice, its signer and header values, and one
	// for the Header: Messages runs once per record and registration, a
	// thousand times a record at fan-out 1,000.
	m := &message{sig: signer{id: rec.ID, keys: cfg.keys},
		values: [3]string{HeaderValue(rec.Kind), HeaderValue(rec.Stream), strconv.FormatUint(rec.Seq, 10)}}
	h := make(http.Header, 3)
	h[HeaderKind], h[HeaderStream], h[HeaderSeq] = m.values[0:1:1], m.values[1:2:2], m.values[2:3:3]
	m.msgs[0] = push.Message{ID: rec.ID, ContentType: ct, Header: h, Body: body, Signer: &m.sig}
	return m.msgs[:], nil
}

// message is what Messages returns, allocated together.
type message struct {
	msgs   [1]push.Message
	sig    signer
	values [3]string // of HeaderKind, HeaderStream, HeaderSeq
}
