package activitypub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-fed/httpsig"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

const (
	// Namespace is the namespace this projection serves.
	Namespace = "activitypub"
	// ContentType is every message's (ActivityPub §3.2), what Mastodon
	// and most servers send and accept.
	ContentType = "application/activity+json"
	// cacheSize bounds the parsed configs kept, about one a sending actor:
	// a parsed key is a few KiB, and parsing one costs far more than
	// projecting an activity (BenchmarkMessages).
	cacheSize = 512
	// activityCacheSize bounds the parsed payloads kept, and
	// maxCachedPayload the size of one (larger ones are parsed every
	// time): a post goes to every inbox of its audience at once, so the
	// records being delivered at a time are few, and parsing one cost a
	// delivery as much as its store's claim did (BENCHMARKS.md §12.6). At
	// most 16 × 2 × 64 KiB, 2 MiB, are kept (a payload and its body).
	activityCacheSize = 16
	maxCachedPayload  = 64 << 10
)

var _ push.Projection = (*Projection)(nil)

// Projection delivers activities to inboxes, a push.Projection (Terminal is
// rec.Final) and push.ConfigValidator safe for concurrent use.
type Projection struct {
	*base
	activities *activities
}

type base = projconfig.Projection[*settings]

// New returns an ActivityPub projection.
func New() *Projection {
	return &Projection{projconfig.New(Namespace, cacheSize, Config.settings), newActivities(activityCacheSize, maxCachedPayload)}
}

// Messages returns the message that delivers rec to reg's inbox, or none
// (package doc). Errors wrap journal.ErrInvalid: a bad config, or a
// payload that is not a JSON object with a type.
func (p *Projection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	s, err := projconfig.Get(p.base, reg.Config)
	if err != nil {
		return nil, fmt.Errorf("activitypub: registration %s: %w", store.Name(reg.Stream, reg.ID), err)
	}
	a, err := p.activities.get(rec.Payload)
	if err != nil {
		return nil, fmt.Errorf("activitypub: record %s (#%d): %w", rec.ID, rec.Seq, err)
	}
	if !s.wants(a.activity) {
		return nil, nil
	}
	return []push.Message{{ID: rec.ID, ContentType: ContentType, Body: a.body, Signer: &signer{s: s}}}, nil
}

// wants applies the rules of package doc's "Which inbox gets what".
func (s *settings) wants(a activity) bool {
	if s.actors == nil {
		return true
	}
	if a.is("Block") && slices.ContainsFunc(a.ids("object"), func(id string) bool { return s.actors[id] }) {
		return false
	}
	addressed := func(id string) bool {
		return s.actors[id] || s.followers[id] || id == Public || id == "as:Public" || id == "Public"
	}
	return slices.ContainsFunc(addressing, func(p string) bool { return slices.ContainsFunc(a.ids(p), addressed) })
}

// signedHeaders are the headers the signature covers, in the order
// Mastodon and the other large servers expect (draft-cavage-12 §2.1.3).
var signedHeaders = []string{httpsig.RequestTarget, "host", "date", "digest"}

// go-fed/httpsig writes the algorithm parameter as "hs2019"; receivers that
// check it (older Mastodon, Pleroma) want the real name. It is not signed.
const (
	libraryAlgorithm = `algorithm="hs2019"`
	wireAlgorithm    = `algorithm="rsa-sha256"`
)

// signer signs one message with the actor's key at send time.
type signer struct{ s *settings }

// Sign sets Date (at), Host (req.Host, else req.URL.Host, so that it can be
// signed), Digest and Signature on req, whose body is body (package doc,
// "Signatures"), replacing earlier ones.
func (g *signer) Sign(req *http.Request, body []byte, at time.Time) error {
	if at.IsZero() {
		return errors.New("activitypub: sign: at is the zero time")
	}
	if req.URL == nil {
		return errors.New("activitypub: sign: request has no URL")
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	for _, h := range []string{"Date", "Digest", "Signature", "Host"} {
		req.Header.Del(h)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	req.Header.Set("Host", host)
	req.Header.Set("Date", at.UTC().Format(http.TimeFormat))
	// A Signer is not safe for concurrent use and costs next to nothing: one
	// per attempt.
	hs, algo, err := httpsig.NewSigner([]httpsig.Algorithm{httpsig.RSA_SHA256}, httpsig.DigestSha256, signedHeaders, httpsig.Signature, 0)
	if err != nil || algo != httpsig.RSA_SHA256 {
		return fmt.Errorf("activitypub: sign: rsa-sha256 unavailable (%v)", err)
	}
	if body == nil {
		body = []byte{}
	}
	if err := hs.SignRequest(g.s.key, g.s.keyID, req, body); err != nil {
		return fmt.Errorf("activitypub: sign: %w", err)
	}
	sig := req.Header.Get("Signature")
	if !strings.Contains(sig, libraryAlgorithm) {
		return errors.New("activitypub: sign: unexpected Signature header from go-fed/httpsig (no hs2019 algorithm parameter)")
	}
	req.Header.Set("Signature", strings.Replace(sig, libraryAlgorithm, wireAlgorithm, 1))
	return nil
}

// Format names the key id, never the key, for every verb.
func (g *signer) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "activitypub signer (rsa-sha256, keyId %q)", g.s.keyID)
}
