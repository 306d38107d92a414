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
)

// The Standard Webhooks headers ("Webhook headers"), in canonical form.
const (
	headerID        = "Webhook-Id"
	headerTimestamp = "Webhook-Timestamp"
	headerSignature = "Webhook-Signature"
)

// signer signs one message at send time. It prints without its secrets.
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

// Format names the message and counts the secrets, for every verb.
func (g *signer) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "webhook signer (message %s, %d secrets redacted)", g.id, len(g.keys))
}

// sigVersion starts each signature: v1 is HMAC-SHA256.
const sigVersion = "v1,"

// key is one secret's HMAC-SHA256, keyed once; each signature hashes a copy
// of it, so a key is safe for concurrent use.
type key struct {
	proto  hash.Hash // keyed, never written: only copied
	secret []byte    // to key a new HMAC where the hash cannot be copied
}

func newKey(secret []byte) *key {
	h := hmac.New(sha256.New, secret)
	h.Reset() // keeps the keyed states, so a copy's Sum starts from them
	return &key{proto: h, secret: secret}
}

// sign appends "v1," and the base64 HMAC of head followed by body to dst.
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
