package activitypub

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-fed/httpsig"
)

// signedHeaders are the headers the signature covers, in this order, as
// Mastodon and the other large servers expect (draft-cavage-12 §2.1.3).
var signedHeaders = []string{httpsig.RequestTarget, "host", "date", "digest"}

// go-fed/httpsig writes the algorithm parameter as "hs2019" (its reading of
// draft-cavage-12 §2.1.3, which deprecates the parameter). Receivers that
// still check it (older Mastodon, Pleroma) want the real name. The parameter
// is not part of the signed string, so renaming it keeps the signature valid.
const (
	libraryAlgorithm = `algorithm="hs2019"`
	wireAlgorithm    = `algorithm="rsa-sha256"`
)

// signer signs one message with the actor's key at send time. Its String and
// Format redact the key.
type signer struct{ s *settings }

// Sign sets, on req (whose body is body):
//
//	Date:      at in IMF-fixdate (RFC 9110 §5.6.7), UTC
//	Host:      req.Host, else req.URL.Host (so that it can be signed)
//	Digest:    SHA-256=<base64 of SHA-256(body)> (RFC 3230 §4.3.2)
//	Signature: keyId="<key_id>",algorithm="rsa-sha256",
//	           headers="(request-target) host date digest",signature="<base64>"
//	           (draft-cavage-http-signatures-12 §4.1, RSASSA-PKCS1-v1_5 SHA-256)
//
// replacing any earlier Date, Digest and Signature, so that every attempt is
// signed afresh. Receivers refuse a Date far from their clock (Mastodon:
// outside [now-1h-5min, now+1h]), which is why the date is the attempt's at
// and never the record's.
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
	// A Signer value of go-fed/httpsig is not safe for concurrent use, and
	// costs next to nothing beside the RSA operation: one per attempt.
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

// String names the key id, never the key.
func (g *signer) String() string {
	return fmt.Sprintf("activitypub signer (rsa-sha256, keyId %q)", g.s.keyID)
}

// GoString is String.
func (g *signer) GoString() string { return g.String() }

// Format prints String for every verb.
func (g *signer) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(g.String())) }
