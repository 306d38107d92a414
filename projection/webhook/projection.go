package webhook

import (
	"context"
	"fmt"

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
	configs *configcache.Cache[signers]
}

// New returns a Standard Webhooks projection.
func New() *Projection {
	return &Projection{configs: configcache.New(cacheSize, parseSigners)}
}

func parseSigners(raw []byte) (signers, error) {
	c, err := decodeConfig(raw)
	if err != nil {
		return nil, err
	}
	return c.keys()
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
// and a signer that adds webhook-id, webhook-timestamp and
// webhook-signature at send time (so the message carries no Header of its
// own). Errors wrap journal.ErrInvalid: a bad config.
func (p *Projection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	keys, err := p.configs.Get(reg.Config)
	if err != nil {
		return nil, fmt.Errorf("webhook: registration %s: %w", push.Name(reg.Stream, reg.ID), err)
	}
	ct := rec.ContentType
	if ct == "" {
		ct = journal.DefaultContentType
	}
	// One allocation for the slice and its signer: Messages runs once per
	// record and registration, a thousand times a record at fan-out 1,000.
	m := &message{sig: signer{id: rec.ID, keys: keys}}
	m.msgs[0] = push.Message{ID: rec.ID, ContentType: ct, Body: rec.Payload, Signer: &m.sig}
	return m.msgs[:], nil
}

// message is what Messages returns, allocated together.
type message struct {
	msgs [1]push.Message
	sig  signer
}
