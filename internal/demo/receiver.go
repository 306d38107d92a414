package demo

import (
	"bytes"
	"context"
	"crypto"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
// and returns the message's id (empty where the wire carries none: it is
// matched by body) and, if the wire needs them, more checks against the
// record the journal says comes next.
type verifier func(req *http.Request, body []byte) (id string, more func(expected) error, err error)

// receiver is one HTTP server on loopback that herald delivers to. It
// keeps, per path ("/" + stream, one per registration), its own account of
// what it verified against the journal.
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
	srv   *http.Server
	mu    sync.Mutex
	paths map[string]*plan
}

// newReceivers makes the demo's receivers (package doc), in the order it
// shows them. keys maps each actor's keyId to its public key, as the inbox
// would fetch it; up brings the down receiver back.
func newReceivers(ctx context.Context, c *credentials, keys map[string]crypto.PublicKey, up *atomic.Bool) ([]*receiver, error) {
	wh, err := verifyWebhook(c.whsec)
	if err != nil {
		return nil, err
	}
	whConfig := func(Stream) any { return webhook.Config{Secrets: []string{c.whsec}} }
	ce := &receiver{name: "cloudevents", takes: "webhooks/", proj: cloudevents.New(), verifies: true,
		config: func(st Stream) any { return cloudevents.Config{Source: sourceOf(st.Name), Token: c.ceToken} },
		about:  "sdk-go's HTTP receiver decodes; bearer token; id, source, type, subject, time, data"}
	if ce.handler, err = cloudEventsHandler(ctx, ce, c.ceToken); err != nil {
		return nil, err
	}
	return []*receiver{
		{name: "inbox", takes: "actor/", proj: activitypub.New(), verifies: true, verify: verifyActivity(keys), status: http.StatusAccepted,
			config: func(st Stream) any {
				return activitypub.Config{KeyID: st.Actor + "#main-key", PrivateKey: c.keyPEM, Actors: []string{InboxActor}, Followers: []string{st.Actor + "/followers"}}
			},
			about: "HTTP signature (go-fed/httpsig) with the actor's key, Digest, Date, keyId owner, no bto/bcc"},
		ce,
		{name: "a2a", takes: "task/", proj: a2a.New(), verifies: true, verify: verifyA2A(c.a2aToken, "Bearer "+c.a2aBearer), status: http.StatusNoContent,
			config: func(Stream) any { return a2a.Config{Token: c.a2aToken, AuthScheme: "Bearer", Credentials: c.a2aBearer} },
			about:  "Authorization and both token headers; a2a-go v2 decodes the StreamResponse; its task"},
		{name: "webhook", takes: "webhooks/", proj: webhook.New(), config: whConfig, verifies: true, verify: wh, status: http.StatusNoContent,
			about: "Standard Webhooks signature and timestamp (standard-webhooks library)"},
		{name: "flaky", takes: "webhooks/", proj: webhook.New(), config: whConfig, verifies: true, verify: wh, status: http.StatusNoContent,
			fault: flaky(flakyTimes), about: fmt.Sprintf("503 with Retry-After 1-2 s to its first %d messages, then verifies as webhook does", flakyTimes)},
		{name: goneName, takes: "webhooks/", proj: webhook.New(), config: whConfig, about: "410 Gone, always",
			fault: func(w http.ResponseWriter, _ *http.Request) bool {
				http.Error(w, "this endpoint was removed", http.StatusGone)
				return true
			}},
		{name: downName, takes: "webhooks/", proj: webhook.New(), config: whConfig, verifies: true, verify: wh, status: http.StatusNoContent,
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
// each of the first n messages it sees (by webhook-id): a receiver under
// load that recovers on its own.
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

// start serves the receiver on a fresh loopback port.
func (r *receiver) start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("start the %s receiver on loopback: %w", r.name, err)
	}
	r.url, r.paths = "http://"+ln.Addr().String(), map[string]*plan{}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	if r.handler != nil {
		r.srv.Handler = r.handler
	}
	go func() { _ = r.srv.Serve(ln) }() // ErrServerClosed after close; deliveries fail, and say so, if it stops before
	return nil
}

// close stops the server, waiting up to 5 s for requests in flight.
func (r *receiver) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.srv.Shutdown(ctx)
}

// ServeHTTP answers a fault, or verifies the request and checks it against
// the journal: r.status, or 401 with the reason (which herald keeps as
// evidence).
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

// expect makes p the account of path: p.want is what the journal says
// should arrive there, in order.
func (r *receiver) expect(path string, p *plan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.Expected, r.paths[path] = len(p.want), p
}

// account returns path's account: an empty one for a path that expects
// nothing, so that what arrives there is counted, and fails. r.mu is held.
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
// where id is empty; and its body, when given, byte for byte), or one
// verified before (a duplicate, which at-least-once delivery allows). more,
// if set, checks the wire's own fields against the expected record. A
// mismatch counts as a failure and is returned.
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
		got = fmt.Sprintf("a %d-byte body", len(body))
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

// fail counts a failure on p, keeps its reason and returns err. Its
// receiver's mu is held.
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
