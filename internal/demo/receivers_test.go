package demo

import (
	"bytes"
	"cmp"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
)

var (
	credsOnce sync.Once
	creds     *credentials
	credsErr  error
)

// testCredentials generates the run's credentials once per test binary: a
// 2048-bit key takes a moment.
func testCredentials(t *testing.T) *credentials {
	t.Helper()
	credsOnce.Do(func() { creds, credsErr = newCredentials() })
	require.NoError(t, credsErr)
	return creds
}

// records are a stream of the examples, as the journal would return them.
func records(t *testing.T, stream string) []journal.Record {
	t.Helper()
	in, err := Examples()
	require.NoError(t, err)
	for _, s := range in.all() {
		if s.Name != stream {
			continue
		}
		var out []journal.Record
		for i, e := range s.Entries {
			out = append(out, journal.Record{Stream: s.Name, Seq: uint64(i + 1), ID: e.ID, Kind: e.Kind, ContentType: e.ContentType,
				Payload: e.Payload, AppendedAt: time.Date(2026, 3, 15, 11, 0, i, 0, time.UTC)})
		}
		return out
	}
	t.Fatalf("no stream %s in the examples", stream)
	return nil
}

// project returns what p makes of recs for reg, as the demo expects it.
func project(t *testing.T, p push.Projection, reg push.Registration, recs []journal.Record) []expected {
	t.Helper()
	var out []expected
	for _, rec := range recs {
		msgs, err := p.Messages(context.Background(), rec, reg)
		require.NoError(t, err)
		for _, m := range msgs {
			out = append(out, expected{Record: rec, Message: m})
		}
	}
	return out
}

func config(t *testing.T, cfg any) push.Config {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	return raw
}

// post sends msg to url as the transport does (signed at at), after tamper
// has had its way with the signed request and its body; it returns the
// status and the answer.
func post(t *testing.T, url string, msg push.Message, at time.Time, tamper func(r *http.Request, body *[]byte)) (int, string) {
	t.Helper()
	body := bytes.Clone(msg.Body)
	req, err := http.NewRequest(http.MethodPost, url, nil)
	require.NoError(t, err)
	for k, vs := range msg.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Content-Type", msg.ContentType)
	if msg.Signer != nil {
		require.NoError(t, msg.Signer.Sign(req, body, at))
	}
	if tamper != nil {
		tamper(req, &body)
	}
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

// flip changes the body's first occurrence of old into new.
func flip(old, new string) func(*http.Request, *[]byte) {
	return func(_ *http.Request, body *[]byte) { *body = bytes.Replace(*body, []byte(old), []byte(new), 1) }
}

// step is one request to a receiver and what must come of it.
type step struct {
	name   string
	msg    int                             // index of the expected message sent
	at     time.Duration                   // signing instant, from now
	tamper func(*http.Request, *[]byte)    // nil: sent as signed
	sign   func(push.Message) push.Message // replace the message (another key, another body)
	status int                             // the receiver's answer
	reason string                          // in the answer, for a refusal
	want   Counts                          // the path's counts afterwards (Expected and Reasons ignored)
}

// run sends the steps to path and checks each answer and the counts after it.
func run(t *testing.T, r *receiver, path string, want []expected, steps []step) {
	t.Helper()
	r.expect(path, &plan{want: want})
	for _, s := range steps {
		msg := want[s.msg].Message
		if s.sign != nil {
			msg = s.sign(msg)
		}
		status, answer := post(t, r.url+path, msg, time.Now().Add(s.at), s.tamper)
		require.Equal(t, s.status, status, "%s: %s", s.name, answer)
		require.Contains(t, answer, s.reason, s.name)
		c := r.counts(path)
		c.Expected, c.Reasons = 0, nil
		require.Equal(t, s.want, c, s.name)
	}
	if c := r.counts(path); c.Failures > 0 {
		require.NotEmpty(t, c.Reasons, "reasons are kept")
		require.LessOrEqual(t, len(c.Reasons), maxReasons)
	}
}

// start starts the demo's receiver of that name, with the actors' keys and
// the down receiver's switch given, and stops it when the test ends.
func start(t *testing.T, name string, keys map[string]crypto.PublicKey, up *atomic.Bool) *receiver {
	t.Helper()
	rs, err := newReceivers(context.Background(), testCredentials(t), keys, cmp.Or(up, new(atomic.Bool)))
	require.NoError(t, err)
	i := slices.IndexFunc(rs, func(r *receiver) bool { return r.name == name })
	require.NoError(t, rs[i].start())
	t.Cleanup(rs[i].srv.Close)
	return rs[i]
}

// The inbox verifies signature, Digest, Date, keyId owner and bto/bcc, and
// counts every refusal.
func TestInboxVerifies(t *testing.T) {
	c := testCredentials(t)
	alice, carol := Origin+"/users/alice", Origin+"/users/carol"
	keys := map[string]crypto.PublicKey{alice + "#main-key": &c.key.PublicKey, carol + "#main-key": &c.key.PublicKey}
	r := start(t, "inbox", keys, nil)

	cfg := activitypub.Config{KeyID: alice + "#main-key", PrivateKey: c.keyPEM, SignatureScheme: activitypub.SchemeCavage, Actors: []string{InboxActor}, Followers: []string{alice + "/followers"}}
	reg := push.Registration{Stream: "actor/alice", ID: "inbox", Namespace: activitypub.Namespace, URL: r.url + "/actor/alice", Config: config(t, cfg)}
	want := project(t, activitypub.New(), reg, records(t, "actor/alice"))
	require.Len(t, want, 4, "the direct message to dave is not for bob's inbox")
	require.Contains(t, string(records(t, "actor/alice")[2].Payload), `"bcc"`)
	require.NotContains(t, string(want[2].Message.Body), `"bcc"`, "the projection removes bcc")

	// resign signs body with the key of keyID, as a sender holding it would.
	resign := func(keyID string, body []byte) func(push.Message) push.Message {
		return func(m push.Message) push.Message {
			cfg := cfg
			cfg.KeyID = keyID
			r := reg
			r.Config = config(t, cfg)
			rec := journal.Record{Stream: reg.Stream, Seq: 9, ID: m.ID, Kind: "Create", ContentType: activityType, Payload: body}
			msgs, err := activitypub.New().Messages(context.Background(), rec, r)
			require.NoError(t, err)
			msgs[0].Body = body // as given, bto and all
			return msgs[0]
		}
	}
	withBto := []byte(strings.Replace(string(want[1].Message.Body), `"to":`, `"bto":["https://other.example/users/dave"],"to":`, 1))
	run(t, r, "/actor/alice", want, []step{
		{name: "valid", msg: 0, status: 202, want: Counts{Verified: 1}},
		{name: "again: a duplicate", msg: 0, status: 202, want: Counts{Verified: 1, Duplicates: 1}},
		{name: "body changed after signing", msg: 1, tamper: flip("herald", "Herald"), status: 401, reason: "Digest",
			want: Counts{Verified: 1, Duplicates: 1, Failures: 1}},
		{name: "body and Digest changed", msg: 1, tamper: func(r *http.Request, b *[]byte) {
			flip("herald", "Herald")(r, b)
			r.Header.Set("Digest", digest(*b))
		}, status: 401, reason: "signature does not verify", want: Counts{Verified: 1, Duplicates: 1, Failures: 2}},
		{name: "signature changed", msg: 1, tamper: func(r *http.Request, _ *[]byte) {
			r.Header.Set("Signature", strings.Replace(r.Header.Get("Signature"), `signature="`, `signature="AAAA`, 1))
		}, status: 401, reason: "signature", want: Counts{Verified: 1, Duplicates: 1, Failures: 3}},
		{name: "a key the inbox does not know", msg: 1, sign: resign("https://evil.example/users/mallory#main-key", want[1].Message.Body),
			status: 401, reason: "unknown keyId", want: Counts{Verified: 1, Duplicates: 1, Failures: 4}},
		{name: "signed by another actor's key", msg: 1, sign: resign(carol+"#main-key", want[1].Message.Body),
			status: 401, reason: "does not belong to the activity's actor", want: Counts{Verified: 1, Duplicates: 1, Failures: 5}},
		{name: "bto delivered", msg: 1, sign: resign(alice+"#main-key", withBto),
			status: 401, reason: "still has bto", want: Counts{Verified: 1, Duplicates: 1, Failures: 6}},
		{name: "a Date two hours old", msg: 1, at: -2 * time.Hour, status: 401, reason: "outside",
			want: Counts{Verified: 1, Duplicates: 1, Failures: 7}},
		{name: "out of order", msg: 2, status: 401, reason: "comes next", want: Counts{Verified: 1, Duplicates: 1, Failures: 8}},
		{name: "the next one, valid", msg: 1, status: 202, want: Counts{Verified: 2, Duplicates: 1, Failures: 8}},
		{name: "the one with bcc, stripped", msg: 2, status: 202, want: Counts{Verified: 3, Duplicates: 1, Failures: 8}},
	})
}

func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return "SHA-256=" + base64.StdEncoding.EncodeToString(sum[:])
}

// The CloudEvents receiver is sdk-go's: it decodes and validates; the
// callback checks the token and the event against the record.
func TestCloudEventsReceiverVerifies(t *testing.T) {
	c := testCredentials(t)
	r := start(t, "cloudevents", nil, nil)
	reg := push.Registration{Stream: "webhooks/shop", ID: "cloudevents", Namespace: cloudevents.Namespace, URL: r.url + "/webhooks/shop",
		Config: config(t, cloudevents.Config{Source: sourceOf("webhooks/shop"), Token: c.ceToken})}
	want := project(t, cloudevents.New(), reg, records(t, "webhooks/shop"))
	header := func(name, value string) func(*http.Request, *[]byte) {
		return func(r *http.Request, _ *[]byte) {
			if value == "" {
				r.Header.Del(name)
			} else {
				r.Header.Set(name, value)
			}
		}
	}
	run(t, r, "/webhooks/shop", want, []step{
		{name: "valid", msg: 0, status: 200, want: Counts{Verified: 1}},
		{name: "no token", msg: 1, tamper: header("Authorization", ""), status: 401, reason: "bearer token", want: Counts{Verified: 1, Failures: 1}},
		{name: "data changed", msg: 1, tamper: flip("issued", "voided"), status: 401, reason: "data", want: Counts{Verified: 1, Failures: 2}},
		{name: "type changed", msg: 1, tamper: header("Ce-Type", "shop.invoice.voided"), status: 401, reason: `type "shop.invoice.voided"`,
			want: Counts{Verified: 1, Failures: 3}},
		{name: "subject changed", msg: 1, tamper: header("Ce-Subject", "webhooks/other"), status: 401, reason: "subject",
			want: Counts{Verified: 1, Failures: 4}},
		{name: "not a CloudEvent: sdk-go refuses it", msg: 1, tamper: header("Ce-Specversion", ""), status: http.StatusUnsupportedMediaType,
			want: Counts{Verified: 1, Failures: 5}},
		{name: "the next one, valid", msg: 1, status: 200, want: Counts{Verified: 2, Failures: 5}},
	})
	require.Contains(t, r.counts("/webhooks/shop").Reasons[0], "no valid bearer token")
}

// The A2A webhook checks its credentials and token headers, decodes with
// a2a-go v2 and compares the body with the journal's.
func TestA2AReceiverVerifies(t *testing.T) {
	c := testCredentials(t)
	r := start(t, "a2a", nil, nil)
	stream := "task/3c1f6a52-8d0e-4b7a-9f21-0d5e7c4b2a10"
	reg := push.Registration{Stream: stream, ID: "a2a", Namespace: a2a.Namespace, URL: r.url + "/" + stream,
		Config: config(t, a2a.Config{Token: c.a2aToken, AuthScheme: "Bearer", Credentials: c.a2aBearer})}
	want := project(t, a2a.New(), reg, records(t, stream))
	del := func(h string) func(*http.Request, *[]byte) {
		return func(r *http.Request, _ *[]byte) { r.Header.Del(h) }
	}
	run(t, r, "/"+stream, want, []step{
		{name: "valid", msg: 0, status: 204, want: Counts{Verified: 1}},
		{name: "no legacy token", msg: 1, tamper: del(a2a.LegacyTokenHeader), status: 401, reason: "X-A2a-Notification-Token", want: Counts{Verified: 1, Failures: 1}},
		{name: "no token", msg: 1, tamper: del(a2a.TokenHeader), status: 401, reason: "A2a-Notification-Token", want: Counts{Verified: 1, Failures: 2}},
		{name: "wrong credentials", msg: 1, tamper: func(r *http.Request, _ *[]byte) { r.Header.Set("Authorization", "Bearer guess") },
			status: 401, reason: "Authorization", want: Counts{Verified: 1, Failures: 3}},
		{name: "not a StreamResponse", msg: 1, tamper: func(_ *http.Request, b *[]byte) { *b = []byte(`{"nope": true}`) },
			status: 401, reason: "a2a-go cannot decode", want: Counts{Verified: 1, Failures: 4}},
		{name: "a valid StreamResponse, but not the journal's", msg: 1, tamper: flip("TASK_STATE_WORKING", "TASK_STATE_FAILED"),
			status: 401, reason: "comes next", want: Counts{Verified: 1, Failures: 5}},
		{name: "the next one, valid", msg: 1, status: 204, want: Counts{Verified: 2, Failures: 5}},
	})
}

// The Standard Webhooks receiver verifies with the reference library.
func TestWebhookReceiverVerifies(t *testing.T) {
	c := testCredentials(t)
	r := start(t, "webhook", nil, nil)
	reg := push.Registration{Stream: "webhooks/shop", ID: "webhook", Namespace: webhook.Namespace, URL: r.url + "/webhooks/shop",
		Config: config(t, webhook.Config{Secrets: []string{c.whsec}})}
	want := project(t, webhook.New(), reg, records(t, "webhooks/shop"))
	other, err := newCredentials()
	require.NoError(t, err)
	otherReg := reg
	otherReg.Config = config(t, webhook.Config{Secrets: []string{other.whsec}})
	signedByOther := project(t, webhook.New(), otherReg, records(t, "webhooks/shop"))
	run(t, r, "/webhooks/shop", want, []step{
		{name: "valid", msg: 0, status: 204, want: Counts{Verified: 1}},
		{name: "body changed", msg: 1, tamper: flip("inv_2026_0042", "inv_2026_0043"), status: 401, reason: "standard webhooks", want: Counts{Verified: 1, Failures: 1}},
		{name: "signature changed", msg: 1, tamper: func(r *http.Request, _ *[]byte) {
			r.Header.Set("webhook-signature", strings.Replace(r.Header.Get("webhook-signature"), "v1,", "v1,AAAA", 1))
		}, status: 401, reason: "standard webhooks", want: Counts{Verified: 1, Failures: 2}},
		{name: "another id", msg: 1, tamper: func(r *http.Request, _ *[]byte) { r.Header.Set("webhook-id", "shop-invoice-02") },
			status: 401, reason: "standard webhooks", want: Counts{Verified: 1, Failures: 3}},
		{name: "signed with another secret", msg: 1, sign: func(push.Message) push.Message { return signedByOther[1].Message },
			status: 401, reason: "standard webhooks", want: Counts{Verified: 1, Failures: 4}},
		{name: "a timestamp ten minutes old", msg: 1, at: -10 * time.Minute, status: 401, reason: "standard webhooks", want: Counts{Verified: 1, Failures: 5}},
		{name: "the next one, valid", msg: 1, status: 204, want: Counts{Verified: 2, Failures: 5}},
	})
}

// flaky answers 503 with Retry-After to the first attempt at its first
// flakyTimes messages; down answers 500 until it is up; gone answers 410.
func TestFaultyReceivers(t *testing.T) {
	c := testCredentials(t)
	reg := push.Registration{Stream: "webhooks/shop", ID: "flaky", Namespace: webhook.Namespace,
		Config: config(t, webhook.Config{Secrets: []string{c.whsec}})}
	want := project(t, webhook.New(), reg, records(t, "webhooks/shop"))
	require.Greater(t, len(want), flakyTimes)

	r := start(t, "flaky", nil, nil)
	r.expect("/s", &plan{want: want})
	var retryAfter []string
	for i := range want {
		for {
			req, err := http.NewRequest(http.MethodPost, r.url+"/s", bytes.NewReader(want[i].Message.Body))
			require.NoError(t, err)
			require.NoError(t, want[i].Message.Signer.Sign(req, want[i].Message.Body, time.Now()))
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				retryAfter = append(retryAfter, resp.Header.Get("Retry-After"))
				continue
			}
			require.Equal(t, http.StatusNoContent, resp.StatusCode)
			break
		}
	}
	require.Equal(t, []string{"1", "2", "1"}, retryAfter)
	require.Equal(t, Counts{Expected: len(want), Verified: len(want), Refused: flakyTimes}, r.counts("/s"))

	var up atomic.Bool
	r = start(t, downName, nil, &up)
	run(t, r, "/s", want, []step{{name: "down", msg: 0, status: 500, reason: "down", want: Counts{Refused: 1}}})
	up.Store(true)
	run(t, r, "/s", want, []step{{name: "up", msg: 0, status: 204, want: Counts{Verified: 1}}})

	r = start(t, goneName, nil, nil)
	run(t, r, "/s", want, []step{{name: "gone", msg: 0, status: 410, want: Counts{Refused: 1}}})
}

// A receiver takes the journal's messages in order, counts a repeat as a
// duplicate, and anything else as a failure.
func TestReceiverChecksAgainstTheJournal(t *testing.T) {
	want := []expected{
		{Record: journal.Record{Stream: "s", Seq: 1}, Message: push.Message{ID: "a", Body: []byte("A")}},
		{Record: journal.Record{Stream: "s", Seq: 2}, Message: push.Message{ID: "b", Body: []byte("B")}},
	}
	r := &receiver{paths: map[string]*plan{}}
	r.expect("/s", &plan{want: want})
	check := func(id, body string) error {
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		return r.check("/s", id, b, nil)
	}
	require.ErrorContains(t, check("b", "B"), "got b where the journal says record s#1 (message a) comes next")
	require.ErrorContains(t, check("a", "X"), "the body differs")
	require.NoError(t, check("a", "A"))
	require.Equal(t, [2]int{1, 0}, [2]int{r.counts("/s").Verified, r.counts("/s").Duplicates}, "verified, not a duplicate")
	require.NoError(t, check("", "A")) // by body, where the wire has no id
	require.Equal(t, [2]int{1, 1}, [2]int{r.counts("/s").Verified, r.counts("/s").Duplicates}, "a duplicate")
	err := r.check("/s", "b", nil, func(e expected) error {
		require.Equal(t, uint64(2), e.Record.Seq)
		return io.ErrUnexpectedEOF
	})
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.NoError(t, check("b", ""))
	require.ErrorContains(t, check("c", ""), "got c after all 2 expected messages")
	require.ErrorContains(t, r.check("/elsewhere", "a", nil, nil), "after all 0 expected messages")

	c := r.counts("/s")
	require.Equal(t, 2, c.Verified)
	require.Equal(t, 1, c.Duplicates)
	require.Equal(t, 4, c.Failures)
	require.Len(t, c.Reasons, maxReasons)
	total := r.counts("")
	require.Equal(t, 5, total.Failures)
	require.Equal(t, 2, total.Expected)
}

// The run's credentials never show in any format.
func TestCredentialsRedacted(t *testing.T) {
	c := testCredentials(t)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s %q", c, c, c, c, c), fmt.Sprint(c), fmt.Sprintf("%v", *c)} {
		for _, secret := range []string{c.whsec, c.ceToken, c.a2aToken, c.a2aBearer, "PRIVATE KEY"} {
			require.NotContains(t, s, secret)
		}
	}
}
