package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
// reference libraries: 5 minutes).
func (g *signer) Sign(req *http.Request, body []byte, at time.Time) error {
	if at.IsZero() {
		return errors.New("webhook: sign: at is the zero time")
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	var sig string
	if len(g.keys) == 1 { // the common case: no slice to join
		s, err := g.keys[0].Sign(g.id, at, body)
		if err != nil {
			return fmt.Errorf("webhook: sign with config.secrets[0]: %w", err)
		}
		sig = s
	} else {
		sigs := make([]string, len(g.keys))
		for i, wh := range g.keys {
			s, err := wh.Sign(g.id, at, body)
			if err != nil {
				return fmt.Errorf("webhook: sign with config.secrets[%d]: %w", i, err)
			}
			sigs[i] = s
		}
		sig = strings.Join(sigs, " ")
	}
	req.Header.Set(headerID, g.id)
	req.Header.Set(headerTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(headerSignature, sig)
	return nil
}

// String names the message, never the secrets.
func (g *signer) String() string {
	return fmt.Sprintf("webhook signer (message %s, %d secrets redacted)", g.id, len(g.keys))
}

// GoString is String.
func (g *signer) GoString() string { return g.String() }

// Format prints String for every verb.
func (g *signer) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(g.String())) }
