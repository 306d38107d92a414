package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

const (
	// Namespace is the namespace this projection serves.
	Namespace = "webhook"
	// cacheSize bounds the parsed configs kept, one a registration.
	cacheSize = 4096
)

// herald's headers on every webhook (package doc, "Messages").
const (
	HeaderKind   = "Herald-Kind"
	HeaderStream = "Herald-Stream"
	HeaderSeq    = "Herald-Seq"
)

// TimestampFormat is the layout of the envelope's "timestamp": RFC 3339 in
// UTC with microseconds (PostgreSQL's precision; finer is dropped).
const TimestampFormat = "2006-01-02T15:04:05.000000Z"

var _ push.Projection = (*Projection)(nil)

// Projection delivers records as Standard Webhooks, a push.Projection
// (Terminal is rec.Final) and push.ConfigValidator safe for concurrent use.
type Projection struct{ *base }

type base = projconfig.Projection[parsed]

// New returns a Standard Webhooks projection.
func New() *Projection { return &Projection{projconfig.New(Namespace, cacheSize, Config.parsed)} }

// Messages returns the one message that delivers rec (package doc,
// "Messages"). Errors wrap journal.ErrInvalid: a bad config.
func (p *Projection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	cfg, err := projconfig.Get(p.base, reg.Config)
	if err != nil {
		return nil, fmt.Errorf("webhook: registration %s: %w", store.Name(reg.Stream, reg.ID), err)
	}
	ct, body := cmp.Or(rec.ContentType, journal.DefaultContentType), rec.Payload
	if cfg.envelope {
		body, ct = envelope(rec, ct), "application/json"
	}
	// Two allocations: the message with its parts, and the Header.
	m := &message{sig: signer{id: rec.ID, keys: cfg.keys},
		values: [3]string{HeaderValue(rec.Kind), HeaderValue(rec.Stream), strconv.FormatUint(rec.Seq, 10)}}
	h := make(http.Header, 3)
	h[HeaderKind], h[HeaderStream], h[HeaderSeq] = m.values[0:1:1], m.values[1:2:2], m.values[2:3:3]
	m.msgs[0] = push.Message{ID: rec.ID, ContentType: ct, Header: h, Body: body, Signer: &m.sig}
	return m.msgs[:], nil
}

type message struct {
	msgs   [1]push.Message
	sig    signer
	values [3]string // of HeaderKind, HeaderStream, HeaderSeq
}

// HeaderValue is s as HeaderKind and HeaderStream carry it, at most
// 3×len(s) bytes: percent-encoded as CloudEvents HTTP binding 1.0.2
// §3.1.3.2 encodes its headers (every byte outside U+0021–U+007E, '"' and
// '%' as %XX, upper-case); url.PathUnescape gives s back.
func HeaderValue(s string) string {
	const hex = "0123456789ABCDEF"
	var b []byte // nil while s needs no encoding
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c <= ' ' || c >= 0x7f || c == '"' || c == '%':
			if b == nil {
				b = append(make([]byte, 0, len(s)+16), s[:i]...)
			}
			b = append(b, '%', hex[c>>4], hex[c&0xf])
		case b != nil:
			b = append(b, c)
		}
	}
	if b == nil {
		return s
	}
	return string(b)
}

// envelope returns rec, whose content type is ct, in the payload structure
// (package doc, "Envelope").
func envelope(rec journal.Record, ct string) []byte {
	data := bytes.Trim(rec.Payload, " \t\r\n")
	isJSON := journal.IsJSONContentType(ct)
	b := make([]byte, 0, len(rec.Kind)+len(ct)+96+base64.StdEncoding.EncodedLen(len(rec.Payload)))
	b = append(b, `{"type":`...)
	b = appendString(b, rec.Kind)
	b = append(b, `,"timestamp":"`...)
	b = rec.AppendedAt.UTC().AppendFormat(b, TimestampFormat)
	if !isJSON {
		b = append(b, `","content_type":`...)
		b = appendString(b, ct)
		b = append(b, `,"data_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, rec.Payload)
		return append(b, `"}`...)
	}
	b = append(b, `","data":`...)
	if len(data) == 0 {
		data = []byte("null") // no JSON payload is empty (journal refuses it); the body stays JSON
	}
	b = append(b, data...)
	return append(b, '}')
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// signer signs one message at send time.
type signer struct {
	id   string
	keys []*key
}

// Sign sets webhook-id, webhook-timestamp (at) and webhook-signature on req,
// whose body is body (package doc, "Messages"), replacing earlier values.
func (g *signer) Sign(req *http.Request, body []byte, at time.Time) error {
	if at.IsZero() {
		return errors.New("webhook: sign: at is the zero time")
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	head := make([]byte, 0, len(g.id)+len(ts)+2)
	head = append(append(append(append(head, g.id...), '.'), ts...), '.')
	sig := make([]byte, 0, len(g.keys)*(len(sigVersion)+base64.StdEncoding.EncodedLen(sha256.Size)+1))
	for _, k := range g.keys {
		if !k.until.IsZero() && !at.Before(k.until) {
			continue // retired at at (Config.Retiring); config.secrets never are, so one signs
		}
		if len(sig) > 0 {
			sig = append(sig, ' ')
		}
		sig = k.sign(sig, head, body)
	}
	req.Header.Set("Webhook-Id", g.id) // the spec's "Webhook headers"
	req.Header.Set("Webhook-Timestamp", ts)
	req.Header.Set("Webhook-Signature", string(sig))
	return nil
}

// Format names the message and counts the secrets, for every verb.
func (g *signer) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "webhook signer (message %s, %d secrets redacted)", g.id, len(g.keys))
}

// sigVersion starts each signature: v1 is HMAC-SHA256.
const sigVersion = "v1,"

// key is one secret's HMAC-SHA256, keyed once; each signature hashes a copy.
type key struct {
	proto  hash.Hash // keyed, never written: only copied
	secret []byte    // to key a new HMAC where the hash cannot be copied
	until  time.Time // a retiring secret's end; zero for none
}

func newKey(secret []byte) *key {
	h := hmac.New(sha256.New, secret)
	h.Reset() // keeps the keyed states, so a copy's Sum starts from them
	return &key{proto: h, secret: secret}
}

// sign appends sigVersion and the base64 HMAC of head and body to dst.
func (k *key) sign(dst, head, body []byte) []byte {
	var h hash.Hash
	if c, ok := k.proto.(hash.Cloner); ok {
		if clone, err := c.Clone(); err == nil {
			h = clone
		}
	}
	if h == nil { // a build whose HMAC cannot be copied (BoringCrypto)
		h = hmac.New(sha256.New, k.secret)
	}
	h.Write(head)
	h.Write(body)
	var sum [sha256.Size]byte
	dst = append(dst, sigVersion...)
	return base64.StdEncoding.AppendEncode(dst, h.Sum(sum[:0]))
}

// DefaultRetry is the webhook namespace's retry policy
// (push.RetryDefaulter): Svix's schedule, 5 s, 5 min, 30 min, 2 h, 5 h,
// 10 h, 10 h (about 27 h), then every 10 h, parking on the first failure 3
// days after the run's first. A receiver down from a Friday evening to a
// Monday morning (about 63 h) is not parked, and a dead one costs about 11
// requests; Svix gives up after about 27 h, Stripe after 3 days, Hook0
// after 8 days.
func (p *Projection) DefaultRetry() push.RetryPolicy { return Retry }

// Retry is DefaultRetry's policy, shared with the cloudevents namespace.
var Retry = push.RetryPolicy{
	Schedule: []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour},
	For:      72 * time.Hour,
}
