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
	keys       KeySource // held keys (WithKeys); nil: none
	parsed     keyCache  // parsed held keys
	activities *activities
}

type base = projconfig.Projection[*settings]

// New returns an ActivityPub projection.
func New(opts ...Option) *Projection {
	p := &Projection{base: projconfig.New(Namespace, cacheSize, Config.settings), activities: newActivities(activityCacheSize, maxCachedPayload)}
	for _, o := range opts {
		o(p)
	}
	return p
}

// ValidateConfig checks reg's config as ParseConfig does and, when it
// names a held key (no private_key), that the key store (WithKeys) holds
// key_id: an unknown one is refused naming config.key_id, and a pinned
// scheme the held key cannot sign (draft-cavage with Ed25519) naming
// config.signature_scheme. Without a key store only the shape is checked,
// and such a registration's messages fail.
func (p *Projection) ValidateConfig(reg push.Registration) error {
	if err := p.base.ValidateConfig(reg); err != nil {
		return err
	}
	s, err := projconfig.Get(p.base, reg.Config)
	if err != nil || s.http.Signer != nil {
		return err
	}
	if p.keys == nil {
		return nil // the shape only: without a key store its messages fail, naming key_id
	}
	key, err := p.parsed.heldKey(context.Background(), p.keys, s.http.ID)
	if errors.Is(err, journal.ErrNotFound) {
		return journal.Invalid("config.key_id", "%q names no stored key: add it with `herald keys add`, or give private_key", s.http.ID)
	} else if err != nil {
		return fmt.Errorf("config.key_id: %w", err)
	}
	if _, err := Schemes(key, s.scheme); err != nil { // as Messages will: an Ed25519 key signs RFC 9421 only
		return journal.Invalid("config.signature_scheme", "with key_id %q: %s", s.http.ID, strings.Replace(err.Error(), "private_key is", "the held key is", 1))
	}
	return nil
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
	sig := &Signer{key: s.http, schemes: s.schemes}
	if s.http.Signer == nil { // a held key, read at each message: a rotation takes effect at the next
		key, err := p.parsed.heldKey(ctx, p.keys, s.http.ID)
		if err != nil {
			return nil, fmt.Errorf("activitypub: registration %s: %w", store.Name(reg.Stream, reg.ID), err)
		}
		schemes, err := Schemes(key, s.scheme)
		if err != nil {
			return nil, fmt.Errorf("activitypub: registration %s: config.signature_scheme with key_id %q: %w", store.Name(reg.Stream, reg.ID), s.http.ID, err)
		}
		sig = &Signer{key: Key{ID: s.http.ID, Signer: key}, schemes: schemes}
	}
	body := a.body
	if s.proof != nil {
		if body, err = addProof(body, *s.proof, rec.AppendedAt); err != nil {
			return nil, fmt.Errorf("activitypub: record %s (#%d): proof: %w", rec.ID, rec.Seq, err)
		}
	}
	return []push.Message{{ID: rec.ID, ContentType: ContentType, Body: body, Signer: sig}}, nil
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

// signedHeaders are the headers a draft-cavage signature covers, in the
// order Mastodon and the other large servers expect (draft-cavage-12
// §2.1.3).
var signedHeaders = []string{httpsig.RequestTarget, "host", "date", "digest"}

// go-fed/httpsig writes the algorithm parameter as "hs2019"; receivers that
// check it (older Mastodon, Pleroma) want the real name. It is not signed.
const (
	libraryAlgorithm = `algorithm="hs2019"`
	wireAlgorithm    = `algorithm="rsa-sha256"`
)

// Signer signs one delivery with an actor's key at send time, in one of
// its schemes (package doc, "Signatures"). It is a push.Signer, whose Sign
// uses the first scheme, and transport.SchemeSigner, through which the
// HTTP transport knocks twice and remembers each host's scheme.
type Signer struct {
	key     Key
	schemes []string
}

// Schemes returns the schemes the signer signs, in the order tried.
func (g *Signer) Schemes() []string { return slices.Clone(g.schemes) }

// Sign signs req in the first scheme (SignScheme).
func (g *Signer) Sign(req *http.Request, body []byte, at time.Time) error {
	return g.SignScheme(req, body, at, g.schemes[0])
}

// SignScheme sets Date (at, IMF-fixdate), Host (req.Host, else
// req.URL.Host) and the scheme's headers on req, whose body is body,
// replacing earlier ones: Content-Digest, Signature-Input and Signature for
// "rfc9421"; Digest and Signature for "cavage" (package doc, "Signatures").
func (g *Signer) SignScheme(req *http.Request, body []byte, at time.Time, scheme string) error {
	if at.IsZero() {
		return fmt.Errorf("activitypub: sign: %w", errZeroAt)
	}
	if req.URL == nil {
		return errors.New("activitypub: sign: request has no URL")
	}
	if !slices.Contains(g.schemes, scheme) {
		return fmt.Errorf("activitypub: sign: scheme %q is not one of this signer's %q", scheme, g.schemes)
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	for _, h := range []string{"Date", "Digest", "Content-Digest", "Signature", "Signature-Input", "Host"} {
		req.Header.Del(h)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	req.Header.Set("Host", host)
	req.Header.Set("Date", at.UTC().Format(http.TimeFormat))
	if body == nil {
		body = []byte{}
	}
	if scheme == SchemeRFC9421 {
		if err := signRFC9421(req, body, at, g.key.Signer, g.key.ID, deliveryComponents); err != nil {
			return fmt.Errorf("activitypub: sign (rfc9421): %w", err)
		}
		return nil
	}
	return g.signCavage(req, body)
}

// signCavage signs with go-fed/httpsig, rsa-sha256.
func (g *Signer) signCavage(req *http.Request, body []byte) error {
	// A go-fed Signer is not safe for concurrent use and costs next to
	// nothing: one per attempt.
	hs, algo, err := httpsig.NewSigner([]httpsig.Algorithm{httpsig.RSA_SHA256}, httpsig.DigestSha256, signedHeaders, httpsig.Signature, 0)
	if err != nil || algo != httpsig.RSA_SHA256 {
		return fmt.Errorf("activitypub: sign: rsa-sha256 unavailable (%v)", err)
	}
	if err := hs.SignRequest(g.key.Signer, g.key.ID, req, body); err != nil {
		return fmt.Errorf("activitypub: sign: %w", err)
	}
	sig := req.Header.Get("Signature")
	if !strings.Contains(sig, libraryAlgorithm) {
		return errors.New("activitypub: sign: unexpected Signature header from go-fed/httpsig (no hs2019 algorithm parameter)")
	}
	req.Header.Set("Signature", strings.Replace(sig, libraryAlgorithm, wireAlgorithm, 1))
	return nil
}

// Format names the key id and schemes, never the key, for every verb.
func (g Signer) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "activitypub signer (%s, keyId %q)", strings.Join(g.schemes, " then "), g.key.ID)
}

// DefaultRetry is the activitypub namespace's retry policy
// (push.RetryDefaulter): store.Backoff's delays (at most about 4 min apart),
// parking on the first failure a day after the run's first, the remote
// downtime Akkoma's publish retries were tuned to ride out (akkoma commit
// 4011d20d). An unreachable server is not charged at all: its host holds its
// registrations up to the host horizon, 7 days as Mastodon's
// DeliveryFailureTracker (store.DefaultHostHorizon).
func (p *Projection) DefaultRetry() push.RetryPolicy { return push.RetryPolicy{For: 24 * time.Hour} }
