package demo

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	v1 "github.com/a2aproject/a2a-go/v2/a2a"
	ce "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/protocol"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/go-fed/httpsig"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/activitypub"
)

// keyBits is the size of the actors' RSA key: what Mastodon generates, and
// the least the ActivityPub projection accepts.
const keyBits = 2048

// credentials are the secrets one run shares between its registrations and
// its receivers: fresh every run, stored only in the demo's database, never
// printed (Format redacts them for every verb).
type credentials struct {
	key       *rsa.PrivateKey // every demo actor signs with it (real actors each have their own)
	keyPEM    string          // PKCS#8
	whsec     string          // Standard Webhooks secret, whsec_…
	ceToken   string          // CloudEvents bearer token
	a2aToken  string          // A2A notification token
	a2aBearer string          // A2A Authorization credentials
}

func newCredentials() (*credentials, error) {
	key, err := rsa.GenerateKey(rand.Reader, keyBits)
	if err != nil {
		return nil, fmt.Errorf("generate the actors' RSA key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode the actors' RSA key: %w", err)
	}
	raw := make([]byte, 24+16+16+24)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generate tokens: %w", err)
	}
	return &credentials{key: key, keyPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		whsec: "whsec_" + base64.StdEncoding.EncodeToString(raw[:24]), ceToken: hex.EncodeToString(raw[24:40]),
		a2aToken: hex.EncodeToString(raw[40:56]), a2aBearer: hex.EncodeToString(raw[56:])}, nil
}

func (credentials) Format(f fmt.State, _ rune) {
	_, _ = f.Write([]byte("demo credentials (RSA key, webhook secret and tokens redacted)"))
}

// An inbox's window for a signature's Date, Mastodon's: at most 1 h ahead
// of its clock, at most 1 h 5 min behind it.
const (
	dateAhead  = time.Hour
	dateBehind = 65 * time.Minute
)

// signedHeaders is the headers parameter Mastodon requires of a delivery's
// signature (draft-cavage-http-signatures-12 §2.1.3).
const signedHeaders = `headers="(request-target) host date digest"`

// verifyActivity checks a delivery as a careful ActivityPub inbox does: the
// HTTP signature, with go-fed/httpsig and the public key its keyId names in
// keys; that it covers signedHeaders; the Digest, recomputed from the body
// (RFC 3230); the Date's window; that the keyId is the activity's actor's
// (<actor>#main-key); that no bto or bcc arrived (ActivityPub §6).
func verifyActivity(keys map[string]crypto.PublicKey) verifier {
	return func(r *http.Request, body []byte) (string, func(expected) error, error) {
		if ct := r.Header.Get("Content-Type"); ct != activitypub.ContentType {
			return "", nil, fmt.Errorf("Content-Type %q, want %q", ct, activitypub.ContentType)
		}
		v, err := httpsig.NewVerifier(r)
		if err != nil {
			return "", nil, fmt.Errorf("signature: %w", err)
		}
		key, ok := keys[v.KeyId()]
		if !ok {
			return "", nil, fmt.Errorf("signature: unknown keyId %q", v.KeyId())
		}
		if err := v.Verify(key, httpsig.RSA_SHA256); err != nil {
			return "", nil, fmt.Errorf("signature does not verify: %w", err)
		}
		if !strings.Contains(r.Header.Get("Signature"), signedHeaders) {
			return "", nil, fmt.Errorf("the signature must cover %s", signedHeaders)
		}
		sum := sha256.Sum256(body)
		if got, want := r.Header.Get("Digest"), "SHA-256="+base64.StdEncoding.EncodeToString(sum[:]); !equal(got, want) {
			return "", nil, fmt.Errorf("Digest %q is not the body's (%s)", got, want)
		}
		date, err := http.ParseTime(r.Header.Get("Date"))
		if err != nil {
			return "", nil, fmt.Errorf("Date %q: %w", r.Header.Get("Date"), err)
		}
		if now := time.Now(); date.Before(now.Add(-dateBehind)) || date.After(now.Add(dateAhead)) {
			return "", nil, fmt.Errorf("Date %s is outside [now-65m, now+1h] of the inbox's clock", r.Header.Get("Date"))
		}
		var act struct {
			ID, Actor        string
			Bto, Bcc, Object json.RawMessage
		}
		if err := json.Unmarshal(body, &act); err != nil {
			return "", nil, errors.New("the body is not an activity (a JSON object)")
		}
		if v.KeyId() != act.Actor+"#main-key" {
			return "", nil, fmt.Errorf("keyId %q does not belong to the activity's actor %q", v.KeyId(), act.Actor)
		}
		if act.Bto != nil || act.Bcc != nil {
			return "", nil, errors.New("the activity still has bto or bcc")
		}
		var obj struct{ Bto, Bcc json.RawMessage }
		if json.Unmarshal(act.Object, &obj) == nil && (obj.Bto != nil || obj.Bcc != nil) {
			return "", nil, errors.New("the activity's object still has bto or bcc")
		}
		return act.ID, nil, nil
	}
}

// verifyWebhook verifies a Standard Webhooks request with the reference
// library: the signature over id.timestamp.body with secret, and a
// timestamp within 5 minutes of its clock. It is matched by webhook-id.
func verifyWebhook(secret string) (verifier, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, errors.New("webhook receiver: the secret is not a whsec_ secret")
	}
	return func(r *http.Request, body []byte) (string, func(expected) error, error) {
		if err := wh.Verify(body, r.Header); err != nil {
			return "", nil, fmt.Errorf("standard webhooks: %w", err)
		}
		return r.Header.Get("webhook-id"), nil, nil
	}, nil
}

// verifyA2A is an A2A client's push notification webhook (A2A 1.0 §4.3.3):
// it checks the Content-Type, the Authorization credentials and the token
// in both headers herald sends (A2A-Notification-Token, read by a2a-go v2,
// and X-A2A-Notification-Token, read by v0.3 SDKs), decodes the body with
// a2a-go v2 as a StreamResponse and checks that it is about the task whose
// stream it follows. It is matched by body.
func verifyA2A(token, authorization string) verifier {
	return func(r *http.Request, body []byte) (string, func(expected) error, error) {
		if ct := r.Header.Get("Content-Type"); ct != a2a.ContentType10 {
			return "", nil, fmt.Errorf("Content-Type %q, want %q", ct, a2a.ContentType10)
		}
		for _, h := range [][2]string{{"Authorization", authorization}, {a2a.TokenHeader, token}, {a2a.LegacyTokenHeader, token}} {
			if !equal(r.Header.Get(h[0]), h[1]) {
				return "", nil, fmt.Errorf("%s is missing or wrong", h[0])
			}
		}
		var sr v1.StreamResponse
		if err := json.Unmarshal(body, &sr); err != nil {
			return "", nil, fmt.Errorf("a2a-go cannot decode the body as a StreamResponse: %w", err)
		}
		if sr.Event == nil || sr.Event.TaskInfo().TaskID == "" {
			return "", nil, errors.New("the StreamResponse names no task")
		}
		task := string(sr.Event.TaskInfo().TaskID)
		return "", func(x expected) error {
			if x.Record.Stream != "task/"+task {
				return fmt.Errorf("the notification is about task %q, but it was sent for stream %s", task, x.Record.Stream)
			}
			return nil
		}, nil
	}
}

// ceRequest is the request sdk-go's callback runs for (sdk-go hands the
// callback the request's context values).
type ceRequest struct {
	*http.Request
	handled atomic.Bool
}

type ceKey struct{}

// cloudEventsHandler receives CloudEvents with sdk-go's own HTTP receiver
// (client.NewHTTPReceiveHandler), which decodes the event (binary or
// structured mode) and validates it. Its callback checks the bearer token,
// then the event's id, source, type, subject, time, datacontenttype and
// data against the record the journal holds for it (the projection's doc).
// A request sdk-go refuses before the callback counts as r's failure too.
func cloudEventsHandler(ctx context.Context, r *receiver, token string) (http.Handler, error) {
	p, err := ce.NewHTTP()
	if err != nil {
		return nil, fmt.Errorf("cloudevents receiver: %w", err)
	}
	sdk, err := ce.NewHTTPReceiveHandler(ctx, p, func(ctx context.Context, e event.Event) protocol.Result {
		req := ctx.Value(ceKey{}).(*ceRequest)
		req.handled.Store(true)
		var err error
		if !equal(req.Header.Get("Authorization"), "Bearer "+token) {
			err = r.fail(req.URL.Path, errors.New("no valid bearer token"))
		} else {
			err = r.check(req.URL.Path, e.ID(), nil, func(x expected) error { return sameEvent(e, x) })
		}
		if err != nil {
			return cehttp.NewResult(http.StatusUnauthorized, "not verified: %s", err.Error())
		}
		return nil // sdk-go answers 200
	})
	if err != nil {
		return nil, fmt.Errorf("cloudevents receiver: %w", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cr := &ceRequest{Request: req}
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		sdk.ServeHTTP(sw, req.WithContext(context.WithValue(req.Context(), ceKey{}, cr)))
		if !cr.handled.Load() {
			_ = r.fail(req.URL.Path, fmt.Errorf("sdk-go refused the request (%d %s) before decoding an event", sw.code, http.StatusText(sw.code)))
		}
	}), nil
}

// sameEvent compares the decoded event with the record it was made from
// (projection/cloudevents): id, source (the registration's), type = kind,
// subject = stream, time = appended-at, data = payload.
func sameEvent(e event.Event, x expected) error {
	rec := x.Record
	for _, c := range []struct{ attr, got, want string }{
		{"id", e.ID(), rec.ID},
		{"source", e.Source(), sourceOf(rec.Stream)},
		{"type", e.Type(), rec.Kind},
		{"subject", e.Subject(), rec.Stream},
		{"datacontenttype", e.DataContentType(), rec.ContentType},
		{"time", e.Time().UTC().Format(time.RFC3339Nano), rec.AppendedAt.UTC().Format(time.RFC3339Nano)},
	} {
		if c.got != c.want {
			return fmt.Errorf("%s %q, want %q", c.attr, c.got, c.want)
		}
	}
	if !bytes.Equal(e.Data(), rec.Payload) {
		return fmt.Errorf("data (%d bytes) differs from the record's payload (%d bytes)", len(e.Data()), len(rec.Payload))
	}
	return nil
}

// sourceOf is the CloudEvents source a webhook stream is registered with.
func sourceOf(stream string) string { return Origin + "/" + stream }

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }

func equal(got, want string) bool { return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 }
