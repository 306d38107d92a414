package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The Standard Webhooks headers in their canonical form, computed once:
// the library spells them in lower case, and Header.Set canonicalizes a
// key that is not canonical into a new string on every call (four strings
// a message, the Header of Messages included).
var (
	headerID        = http.CanonicalHeaderKey(standardwebhooks.HeaderWebhookID)
	headerTimestamp = http.CanonicalHeaderKey(standardwebhooks.HeaderWebhookTimestamp)
	headerSignature = http.CanonicalHeaderKey(standardwebhooks.HeaderWebhookSignature)
)

// signer signs one message at send time. Its String and Format redact the
// secrets.
type signer struct {
	id   string
	keys signers
}

// Sign sets, on req (whose body is body):
//
//	webhook-id:        the message id
//	webhook-timestamp: at in unix seconds
//	webhook-signature: v1,<base64 HMAC-SHA256(secret, id + "." + timestamp + "." + body)>
//	                   once per secret, space-separated, in config order
//
// (Standard Webhooks 1.0.0, "Signature scheme" and "Webhook headers"),
// replacing earlier values, so that each attempt carries its own timestamp:
// receivers refuse one more than a few minutes from their clock (the
// reference libraries: 5 minutes). The signatures are what the Standard
// Webhooks library's Sign gives (the tests verify them with its Verify),
// computed from a copy of each secret's keyed HMAC rather than keyed anew,
// and without copying the body into one string to sign.
func (g *signer) Sign(req *http.Request, body []byte, at time.Time) error {
	if at.IsZero() {
		return errors.New("webhook: sign: at is the zero time")
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	// The signed content's head, "id.timestamp.", then the body.
	head := make([]byte, 0, len(g.id)+len(ts)+2)
	head = append(append(append(append(head, g.id...), '.'), ts...), '.')
	sig := make([]byte, 0, len(g.keys)*(len(sigVersion)+base64.StdEncoding.EncodedLen(sha256.Size)+1))
	for i, k := range g.keys {
		if i > 0 {
			sig = append(sig, ' ')
		}
		sig = k.sign(sig, head, body)
	}
	req.Header.Set(headerID, g.id)
	req.Header.Set(headerTimestamp, ts)
	req.Header.Set(headerSignature, string(sig))
	return nil
}

// sigVersion starts each signature: v1 is HMAC-SHA256.
const sigVersion = "v1,"

// key is one secret's HMAC-SHA256, keyed once (the inner and outer pads
// hashed at parse time); each signature works on a copy of it, so a key
// is safe for concurrent use.
type key struct {
	proto  hash.Hash // keyed, never written: only copied
	secret []byte    // to key a new HMAC where the hash cannot be copied
}

func newKey(secret []byte) *key {
	h := hmac.New(sha256.New, secret)
	h.Reset() // keeps the keyed states, so a copy's Sum starts from them
	return &key{proto: h, secret: secret}
}

// mac returns a keyed HMAC of its own.
func (k *key) mac() hash.Hash {
	if c, ok := k.proto.(hash.Cloner); ok {
		if h, err := c.Clone(); err == nil {
			return h.(hash.Hash)
		}
	}
	return hmac.New(sha256.New, k.secret) // a build whose HMAC cannot be copied (BoringCrypto)
}

// sign appends "v1," and the base64 HMAC of head followed by body to dst.
func (k *key) sign(dst, head, body []byte) []byte {
	h := k.mac()
	h.Write(head)
	h.Write(body)
	var sum [sha256.Size]byte
	dst = append(dst, sigVersion...)
	return base64.StdEncoding.AppendEncode(dst, h.Sum(sum[:0]))
}

// String names the message, never the secrets.
func (g *signer) String() string {
	return fmt.Sprintf("webhook signer (message %s, %d secrets redacted)", g.id, len(g.keys))
}

// GoString is String.
func (g *signer) GoString() string { return g.String() }

// Format prints String for every verb.
func (g *signer) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(g.String())) }
