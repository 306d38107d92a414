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
	// ContentType is the media type of every message: ActivityPub §3.2 makes
	// it equivalent to application/ld+json with the activitystreams
	// profile, and it is what Mastodon and most servers send and accept.
	ContentType = "application/activity+json"
	// cacheSize bounds the parsed configs kept, usually one per sending
	// actor: a parsed key is a few KiB, and parsing it costs far more than
	// projecting an activity (BenchmarkMessages).
	cacheSize = 512
)

var (
	_ push.Projection      = (*Projection)(nil)
	_ push.ConfigValidator = (*Projection)(nil)
)

// Projection delivers activities to inboxes, a push.Projection (Terminal is
// rec.Final) and push.ConfigValidator safe for concurrent use.
type Projection struct{ *base }

type base = configcache.Projection[*settings]

// New returns an ActivityPub projection.
func New() *Projection { return &Projection{configcache.New(Namespace, cacheSize, Config.settings)} }

// Messages returns the message that delivers rec to reg's inbox, or none
// (package doc). Errors wrap journal.ErrInvalid: a bad config, or a
// payload that is not a JSON object with a type.
func (p *Projection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	s, err := configcache.Get(p.base, reg.Config)
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
	return []push.Message{{ID: rec.ID, ContentType: ContentType, Body: body, Signer: &signer{s: s}}}, nil
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
