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
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
)

// The receivers the demo judges by name; a receiver's name is also the id
// of its registrations.
const (
	goneName = "gone"
	downName = "down"
)

const (
	flakyTimes = 3       // messages the flaky receiver answers 503 once each
	maxBody    = 2 << 20 // bytes a receiver reads: a record's payload (journal.DefaultMaxPayload) in its envelope
	maxReasons = 3       // distinct failure reasons kept per path
)

// verifier checks a request with the receiving side of its wire's library
// and returns the message's id (empty where the wire carries none) and, if
// the wire needs them, more checks against the record that comes next.
type verifier func(req *http.Request, body []byte) (id string, more func(expected) error, err error)

// receiver is one HTTP server on loopback that herald delivers to, with an
// account per path ("/" + stream, a registration) of what it verified.
type receiver struct {
	name, about string
	verifies    bool   // the demo passes only if it verified all it expects
	takes       string // the prefix of the input streams registered for it
	proj        push.Projection
	config      func(Stream) any // a registration's config

	verify  verifier
	status  int                                           // the answer to a verified message
	fault   func(http.ResponseWriter, *http.Request) bool // answers instead of verify when it returns true
	handler http.Handler                                  // serves instead of verify and fault (cloudevents)

	url   string // http://127.0.0.1:port
	srv   *httptest.Server
	mu    sync.Mutex
	paths map[string]*plan
}

// newReceivers makes the demo's receivers, in the order it shows them.
// keys maps each actor's keyId to its public key, as the inbox would fetch
// it; up brings the down receiver back.
func newReceivers(ctx context.Context, c *credentials, keys map[string]crypto.PublicKey, up *atomic.Bool) ([]*receiver, error) {
	wh, err := verifyWebhook(c.whsec)
	if err != nil {
		return nil, err
	}
	whConfig := func(Stream) any { return webhook.Config{Secrets: []string{c.whsec}} }
	whProj := webhook.New() // one namespace, one projection: the worker serves every webhook receiver with it
	ce := &receiver{name: "cloudevents", takes: "webhooks/", proj: cloudevents.New(), verifies: true,
		config: func(st Stream) any { return cloudevents.Config{Source: sourceOf(st.Name), Token: c.ceToken} },
		about:  "sdk-go's HTTP receiver decodes; bearer token; id, source, type, subject, time, data"}
	if ce.handler, err = cloudEventsHandler(ctx, ce, c.ceToken); err != nil {
		return nil, err
	}
	return []*receiver{
		{name: "inbox", takes: "actor/", proj: activitypub.New(), verifies: true, verify: verifyActivity(keys), status: http.StatusAccepted,
			config: func(st Stream) any {
				// The inbox verifies with go-fed/httpsig, draft-cavage only:
				// pinned, so that the demo shows no knock.
				return activitypub.Config{KeyID: st.Actor + "#main-key", PrivateKey: c.keyPEM, SignatureScheme: activitypub.SchemeCavage, Actors: []string{InboxActor}, Followers: []string{st.Actor + "/followers"}}
			},
			about: "HTTP signature (go-fed/httpsig) with the actor's key, Digest, Date, keyId owner, no bto/bcc"},
		ce,
		{name: "a2a", takes: "task/", proj: a2a.New(), verifies: true, verify: verifyA2A(c.a2aToken, "Bearer "+c.a2aBearer), status: http.StatusNoContent,
			config: func(Stream) any { return a2a.Config{Token: c.a2aToken, AuthScheme: "Bearer", Credentials: c.a2aBearer} },
			about:  "Authorization and both token headers; a2a-go v2 decodes the StreamResponse; its task"},
		{name: "webhook", takes: "webhooks/", proj: whProj, config: whConfig, verifies: true, verify: wh, status: http.StatusNoContent,
			about: "Standard Webhooks signature and timestamp (standard-webhooks library)"},
		{name: "flaky", takes: "webhooks/", proj: whProj, config: whConfig, verifies: true, verify: wh, status: http.StatusNoContent,
			fault: flaky(flakyTimes), about: fmt.Sprintf("503 with Retry-After 1-2 s to its first %d messages, then verifies as webhook does", flakyTimes)},
		{name: goneName, takes: "webhooks/", proj: whProj, config: whConfig, about: "410 Gone, always",
			fault: func(w http.ResponseWriter, _ *http.Request) bool {
				http.Error(w, "this endpoint was removed", http.StatusGone)
				return true
			}},
		{name: downName, takes: "webhooks/", proj: whProj, config: whConfig, verifies: true, verify: wh, status: http.StatusNoContent,
			about: "500 until the demo brings it back, then verifies as webhook does", fault: func(w http.ResponseWriter, _ *http.Request) bool {
				down := !up.Load()
				if down {
					http.Error(w, "down for maintenance", http.StatusInternalServerError)
				}
				return down
			}},
	}, nil
}

// flaky answers 503 with a Retry-After of 1 or 2 s to the first attempt at
// each of the first n messages it sees (by webhook-id).
func flaky(n int) func(http.ResponseWriter, *http.Request) bool {
	var mu sync.Mutex
	refused := map[string]bool{}
	return func(w http.ResponseWriter, req *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		id, seen := req.Header.Get("webhook-id"), len(refused)
		if seen >= n || refused[id] {
			return false
		}
		refused[id] = true
		w.Header().Set("Retry-After", strconv.Itoa(1+seen%2))
		http.Error(w, "busy: try again shortly", http.StatusServiceUnavailable)
		return true
	}
}

// start serves r on a loopback port with httptest's server, given its own
// listener so that a machine without loopback gets an error, not a panic.
func (r *receiver) start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("receiver %s: %w", r.name, err)
	}
	h := r.handler
	if h == nil {
		h = r
	}
	r.paths, r.srv = map[string]*plan{}, &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	r.srv.Start()
	r.url = r.srv.URL
	return nil
}

// ServeHTTP answers a fault, or verifies the request and checks it against
// the journal: r.status, or 401 with the reason.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.fault != nil && r.fault(w, req) {
		r.mu.Lock()
		r.account(req.URL.Path).Refused++
		r.mu.Unlock()
		return
	}
	var id string
	var more func(expected) error
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	if err != nil {
		err = r.fail(req.URL.Path, fmt.Errorf("read the body: %w", err))
	} else if id, more, err = r.verify(req, body); err != nil {
		err = r.fail(req.URL.Path, err)
	} else {
		err = r.check(req.URL.Path, id, body, more)
	}
	if err != nil {
		http.Error(w, "not verified: "+err.Error(), http.StatusUnauthorized)
		return
	}
	w.WriteHeader(r.status)
}

// expect makes p, whose want should arrive in order, the account of path.
func (r *receiver) expect(path string, p *plan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.Expected, r.paths[path] = len(p.want), p
}

// account returns path's account, an empty one (which fails what arrives)
// for a path that expects nothing. r.mu is held.
func (r *receiver) account(path string) *plan {
	if r.paths[path] == nil {
		r.paths[path] = &plan{receiver: r}
	}
	return r.paths[path]
}

// fail counts a request to path that failed verification and returns err.
func (r *receiver) fail(path string, err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.account(path).fail(err)
}

// check matches a delivery its wire's library verified against the
// journal: it must be the next message path expects (by id, or by body
// where id is empty; and its body, when given, byte for byte), passing
// more, or one verified before (a duplicate). A mismatch counts as a
// failure and is returned.
func (r *receiver) check(path, id string, body []byte, more func(expected) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.account(path)
	same := func(e expected) bool {
		if id != "" {
			return e.Message.ID == id
		}
		return bytes.Equal(e.Message.Body, body)
	}
	if a.Verified < len(a.want) && same(a.want[a.Verified]) {
		e := a.want[a.Verified]
		if body != nil && !bytes.Equal(body, e.Message.Body) {
			return a.fail(fmt.Errorf("message %s: the body differs from what the projection makes of record %s#%d", e.Message.ID, e.Record.Stream, e.Record.Seq))
		}
		if more != nil {
			if err := more(e); err != nil {
				return a.fail(fmt.Errorf("message %s: %w", e.Message.ID, err))
			}
		}
		a.Verified++
		return nil
	}
	if slices.ContainsFunc(a.want[:a.Verified], same) {
		a.Duplicates++
		return nil
	}
	got := id
	if got == "" {
		got = fmt.Sprintf("a body of %d bytes", len(body))
	}
	if a.Verified >= len(a.want) {
		return a.fail(fmt.Errorf("got %s after all %d expected messages", got, len(a.want)))
	}
	e := a.want[a.Verified]
	return a.fail(fmt.Errorf("got %s where the journal says record %s#%d (message %s) comes next", got, e.Record.Stream, e.Record.Seq, e.Message.ID))
}

// counts returns what the receiver verified on path, or on all its paths
// when path is "".
func (r *receiver) counts(path string) Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	var c Counts
	for _, p := range slices.Sorted(maps.Keys(r.paths)) {
		if a := r.paths[p]; path == "" || p == path {
			c.Expected, c.Verified, c.Duplicates = c.Expected+a.Expected, c.Verified+a.Verified, c.Duplicates+a.Duplicates
			c.Refused, c.Failures = c.Refused+a.Refused, c.Failures+a.VerifyFailures
			for _, reason := range a.reasons {
				c.Reasons = addReason(c.Reasons, reason)
			}
		}
	}
	return c
}

// fail counts a failure on p and keeps its reason. Its receiver's mu is
// held.
func (p *plan) fail(err error) error {
	p.VerifyFailures++
	p.reasons = addReason(p.reasons, err.Error())
	return err
}

// addReason adds reason to reasons if it is new and there is room.
func addReason(reasons []string, reason string) []string {
	if len(reasons) < maxReasons && !slices.Contains(reasons, reason) {
		return append(reasons, reason)
	}
	return reasons
}

// keyBits is what Mastodon generates, and the least the ActivityPub
// projection accepts.
const keyBits = 2048

// credentials are the secrets one run shares between its registrations and
// its receivers, fresh every run and never printed.
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

// An inbox's window for a signature's Date, Mastodon's.
const (
	dateAhead  = time.Hour
	dateBehind = 65 * time.Minute
)

// signedHeaders is the headers parameter Mastodon requires of a delivery's
// signature (draft-cavage-http-signatures-12 §2.1.3).
const signedHeaders = `headers="(request-target) host date digest"`

// verifyActivity checks a delivery as a careful ActivityPub inbox does: the
// HTTP signature with the key its keyId names in keys, and covering
// signedHeaders; the Digest (RFC 3230); the Date's window; the keyId's
// owner; no bto or bcc (ActivityPub §6).
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
// library.
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
// it checks the Content-Type, the Authorization credentials and both token
// headers, and that a2a-go v2 decodes the body as a StreamResponse about
// the task whose stream it follows.
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

// cloudEventsHandler receives CloudEvents with sdk-go's own HTTP receiver,
// which decodes and validates the event; its callback checks the bearer
// token and the event against the record (sameEvent), refusing with 401. A
// request sdk-go refuses itself, before the callback, counts as r's
// failure too.
func cloudEventsHandler(ctx context.Context, r *receiver, token string) (http.Handler, error) {
	p, err := ce.NewHTTP()
	if err != nil {
		return nil, fmt.Errorf("cloudevents receiver: %w", err)
	}
	sdk, err := ce.NewHTTPReceiveHandler(ctx, p, func(ctx context.Context, e event.Event) protocol.Result {
		req := cehttp.RequestDataFromContext(ctx)
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
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		sdk.ServeHTTP(sw, req.WithContext(cehttp.WithRequestDataAtContext(req.Context(), req)))
		if sw.code != http.StatusOK && sw.code != http.StatusUnauthorized {
			_ = r.fail(req.URL.Path, fmt.Errorf("sdk-go refused the request (%d %s) before decoding an event", sw.code, http.StatusText(sw.code)))
		}
	}), nil
}

// sameEvent compares the decoded event with the record it was made from
// (projection/cloudevents' package doc).
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
