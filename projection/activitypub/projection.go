package activitypub

import (
	"context"
	"fmt"
	"slices"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/configcache"
	"github.com/heraldpush/herald/push"
)

const (
	// Namespace is the namespace this projection serves.
	Namespace = "activitypub"
	// ContentType is the media type of every message. ActivityPub §7 names
	// application/ld+json with the activitystreams profile and has servers
	// treat application/activity+json as its equivalent (§3.2); Mastodon and
	// most servers send the latter, which is what they all accept.
	ContentType = "application/activity+json"
	// cacheSize bounds the parsed configs kept (one per distinct config:
	// usually one per sending actor). A parsed 2048-bit key is a few KiB.
	cacheSize = 512
)

var (
	_ push.Projection      = (*Projection)(nil)
	_ push.ConfigValidator = (*Projection)(nil)
)

// Projection delivers ActivityPub activities to inboxes. It is safe for
// concurrent use.
type Projection struct {
	configs *configcache.Cache[*settings]
}

// New returns an ActivityPub projection.
func New() *Projection {
	return &Projection{configs: configcache.New(cacheSize, parseSettings)}
}

func parseSettings(raw []byte) (*settings, error) {
	c, err := decodeConfig(raw)
	if err != nil {
		return nil, err
	}
	return c.settings()
}

// Namespace returns "activitypub".
func (p *Projection) Namespace() string { return Namespace }

// Terminal reports rec.Final: an activity never ends a registration by its
// content.
func (p *Projection) Terminal(rec journal.Record) bool { return rec.Final }

// ValidateConfig checks reg.Config as ParseConfig does. Errors wrap
// journal.ErrInvalid, name the field, and never contain the private key.
func (p *Projection) ValidateConfig(reg push.Registration) error {
	_, err := p.configs.Get(reg.Config)
	return err
}

// Messages returns the one message that delivers rec, an activity, to reg's
// inbox, or none when the inbox must not receive it:
//
//   - a Block whose object is one of the config's actors (ActivityPub §6.9:
//     servers SHOULD NOT deliver a Block to its object);
//   - with actors configured, an activity addressed (to, cc, bto, bcc,
//     audience) to none of them, nor to Public, nor to a configured
//     followers collection.
//
// The message's id is rec.ID; its body is the payload without bto and bcc
// (ActivityPub §6), otherwise byte for byte when there were none; its
// signer adds Date, Digest and an rsa-sha256 Signature at send time.
//
// Errors wrap journal.ErrInvalid: a bad config, or a payload that is not a
// JSON object with a type.
func (p *Projection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	s, err := p.configs.Get(reg.Config)
	if err != nil {
		return nil, fmt.Errorf("activitypub: registration %s: %w", push.Name(reg.Stream, reg.ID), err)
	}
	a, err := parseActivity(rec.Payload)
	if err != nil {
		return nil, fmt.Errorf("activitypub: record %s (#%d): %w", rec.ID, rec.Seq, err)
	}
	if !s.wants(a) {
		return nil, nil
	}
	body := rec.Payload
	if a.needsStripping() {
		if body, err = stripHidden(rec.Payload); err != nil {
			return nil, fmt.Errorf("activitypub: record %s (#%d): remove bto/bcc: %w", rec.ID, rec.Seq, journal.Invalid("payload", "%v", err))
		}
	}
	return []push.Message{{
		ID:          rec.ID,
		ContentType: ContentType,
		Body:        body,
		Signer:      &signer{s: s},
	}}, nil
}

// wants applies the Block and addressing rules of the inbox's actors.
func (s *settings) wants(a activity) bool {
	if s.actors == nil {
		return true
	}
	if a.is("Block") && slices.ContainsFunc(a.ids("object"), func(id string) bool { return s.actors[id] }) {
		return false
	}
	return slices.ContainsFunc(a.audience(), func(id string) bool {
		return s.actors[id] || s.followers[id] || isPublic(id)
	})
}
