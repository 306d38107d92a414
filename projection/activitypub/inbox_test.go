package activitypub

import (
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-fed/httpsig"

	"github.com/heraldpush/herald/internal/corpustest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
)

// inbox is a receiving server that checks every delivery as a careful
// fediverse server does, answering 202 or 401 with the reason.
type inbox struct {
	*projtest.Receiver[received]
	pub   *rsa.PublicKey
	clock time.Time // the receiver's "now"
}

type received struct {
	header   http.Header
	body     []byte
	activity map[string]any
}

func newInbox(t *testing.T, clock time.Time) *inbox {
	_, pub := testKey(t)
	in := &inbox{pub: pub, clock: clock}
	in.Receiver = projtest.NewReceiver(t, http.StatusAccepted, func(r *http.Request, body []byte) (received, error) {
		if err := in.check(r, body); err != nil {
			return received{}, err
		}
		var act map[string]any
		_ = json.Unmarshal(body, &act)
		return received{header: r.Header.Clone(), body: body, activity: act}, nil
	})
	return in
}

func (in *inbox) url(path string) string { return in.URL + path }

// check verifies what Mastodon verifies of a delivery.
func (in *inbox) check(r *http.Request, body []byte) error {
	if ct := r.Header.Get("Content-Type"); ct != ContentType {
		return fmt.Errorf("Content-Type %q, want %q", ct, ContentType)
	}
	if err := verifySignature(r, in.pub); err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	if want, got := "SHA-256="+base64.StdEncoding.EncodeToString(sum[:]), r.Header.Get("Digest"); got != want {
		return fmt.Errorf("Digest %q, want %q (recomputed from the body)", got, want)
	}
	// Mastodon's window: [now-65 min, now+1 h].
	date := r.Header.Get("Date")
	at, err := http.ParseTime(date)
	if err != nil {
		return fmt.Errorf("Date %q: %w", date, err)
	}
	if at.Before(in.clock.Add(-65*time.Minute)) || at.After(in.clock.Add(time.Hour)) {
		return fmt.Errorf("Date %s is outside [now-65m, now+1h] of the receiver's clock %s", date, in.clock.UTC().Format(http.TimeFormat))
	}
	return checkNoHidden(body)
}

// verifySignature checks the HTTP signature with go-fed/httpsig's verifier
// and the parameters Mastodon requires.
func verifySignature(r *http.Request, pub *rsa.PublicKey) error {
	sig := r.Header.Get("Signature")
	for _, want := range []string{`keyId="` + aliceKeyID + `"`, `algorithm="rsa-sha256"`, `headers="(request-target) host date digest"`} {
		if !strings.Contains(sig, want) {
			return fmt.Errorf("Signature %q lacks %s", sig, want)
		}
	}
	v, err := httpsig.NewVerifier(r)
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	if v.KeyId() != aliceKeyID {
		return fmt.Errorf("keyId %q, want %q", v.KeyId(), aliceKeyID)
	}
	if err := v.Verify(pub, httpsig.RSA_SHA256); err != nil {
		return fmt.Errorf("signature does not verify: %w", err)
	}
	return nil
}

// checkNoHidden fails if bto or bcc appear on the activity or its object.
func checkNoHidden(body []byte) error {
	var act map[string]json.RawMessage
	if err := json.Unmarshal(body, &act); err != nil {
		return fmt.Errorf("body is not a JSON object: %w", err)
	}
	objs := []map[string]json.RawMessage{act}
	var one map[string]json.RawMessage
	var many []map[string]json.RawMessage
	if json.Unmarshal(act["object"], &one) == nil && one != nil {
		objs = append(objs, one)
	} else if json.Unmarshal(act["object"], &many) == nil {
		objs = append(objs, many...)
	}
	for _, o := range objs {
		for _, k := range hidden {
			if _, ok := o[k]; ok {
				return errors.New("the delivered activity still has " + k)
			}
		}
	}
	return nil
}

// corpusActivity is an activity of the Activity Streams corpus.
type corpusActivity struct {
	name string
	act  map[string]any
}

// corpusActivities returns the activities of the corpus, in file order.
func corpusActivities(t *testing.T) []corpusActivity {
	t.Helper()
	dir := corpustest.Dir(t, "activitystreams")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no activities in %s (%v)", dir, err)
	}
	var out []corpusActivity
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var act map[string]any
		if err := json.Unmarshal(raw, &act); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, corpusActivity{strings.TrimSuffix(filepath.Base(f), "-jsonld.json"), act})
	}
	return out
}

// TestCorpusActivitiesDelivered delivers every activity of the Activity
// Streams corpus to a verifying inbox: signature, Digest, Date window, no
// bto/bcc, and content otherwise unchanged.
func TestCorpusActivitiesDelivered(t *testing.T) {
	in := newInbox(t, at)
	p := New()
	reg := registration(in.url("/users/bob/inbox"), config(t, []string{bob}, []string{aliceFollowers}))
	activities := corpusActivities(t)
	sawHidden := false
	for _, c := range activities {
		name, act := c.name, c.act
		// The spec's examples have no ids and little addressing: supply the
		// activity's id, alice as its actor (the key's owner) and bob, whom
		// the inbox serves, among its "to".
		act["id"] = "https://example.com/activities/" + name
		act["actor"] = alice
		to := []any{bob}
		switch v := act["to"].(type) {
		case string:
			to = append(to, v)
		case []any:
			to = append(to, v...)
		}
		act["to"] = to
		_, hasBto := act["bto"]
		_, hasBcc := act["bcc"]
		sawHidden = sawHidden || hasBto || hasBcc

		rec := record(t, act["id"].(string), act)
		msg := projtest.One(t, p, rec, reg)
		if msg.ID != rec.ID {
			t.Errorf("%s: message id %q, want the record id %q", name, msg.ID, rec.ID)
		}
		if out := projtest.Deliver(t, reg.URL, msg, at); !out.OK() || out.Status != http.StatusAccepted {
			t.Fatalf("%s: delivery: %s", name, projtest.Failure(out))
		}
		got := in.Received()
		want := make(map[string]any, len(act))
		for k, v := range act {
			if k != "bto" && k != "bcc" {
				want[k] = v
			}
		}
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		want = nil
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if last := got[len(got)-1].activity; !reflect.DeepEqual(last, want) {
			t.Errorf("%s: delivered activity differs beyond bto/bcc:\n got %v\nwant %v", name, last, want)
		}
	}
	if n := len(in.Received()); n != len(activities) {
		t.Fatalf("inbox accepted %d of %d activities", n, len(activities))
	}
	if !sawHidden {
		t.Fatal("the corpus has no activity with bto or bcc: the removal was not exercised")
	}
}

// inboxCase is an activity, the actors the inbox serves, and how many
// messages it must get.
type inboxCase struct {
	name     string
	activity map[string]any
	actors   []string
	want     int
}

// checkInboxGets runs each case against a verifying inbox at path, with
// followers configured beside actors: Messages gives want messages, and the
// inbox accepts each.
func checkInboxGets(t *testing.T, path string, followers []string, cases []inboxCase) {
	t.Helper()
	p, in := New(), newInbox(t, at)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f []string
			if c.actors != nil {
				f = followers
			}
			reg := registration(in.url(path), config(t, c.actors, f))
			msgs, refused := projtest.Messages(t, p, record(t, c.activity["id"].(string), c.activity), reg)
			if refused || len(msgs) != c.want {
				t.Fatalf("%d messages (refused %t), want %d", len(msgs), refused, c.want)
			}
			for _, m := range msgs {
				if out := projtest.Deliver(t, reg.URL, m, at); !out.OK() || out.Status != http.StatusAccepted {
					t.Fatalf("delivery: %s", projtest.Failure(out))
				}
			}
		})
	}
}

// TestBlockNeverDeliveredToBlockedActor: a Block is not sent to an inbox that
// serves its object, however the object is written; it is sent elsewhere.
func TestBlockNeverDeliveredToBlockedActor(t *testing.T) {
	var corpusBlock map[string]any // in the shared corpus, ex173: "Sally blocked Joe"
	for _, c := range corpusActivities(t) {
		if _, ok := c.act["object"].(string); ok && c.act["type"] == "Block" {
			corpusBlock = c.act
			break
		}
	}
	if corpusBlock == nil {
		t.Fatal("the corpus has no Block of a string id")
	}
	joe := corpusBlock["object"].(string)
	corpusBlock["id"], corpusBlock["to"] = "https://example.com/blocks/0", joe

	block := func(object any, typ any) map[string]any {
		return map[string]any{"id": "https://example.com/blocks/1", "type": typ, "actor": alice, "object": object, "to": []any{bob}}
	}
	checkInboxGets(t, "/inbox", nil, []inboxCase{
		{"corpus Block to the blocked actor's inbox", corpusBlock, []string{joe}, 0},
		{"object as a string id", block(bob, "Block"), []string{bob}, 0},
		{"object with an id", block(map[string]any{"id": bob, "type": "Person"}, "Block"), []string{bob}, 0},
		{"object array containing the actor", block([]any{carol, bob}, "Block"), []string{bob}, 0},
		{"type array", block(bob, []any{"Block"}), []string{bob}, 0},
		{"type as:Block", block(bob, "as:Block"), []string{bob}, 0},
		{"inbox serving another actor too", block(bob, "Block"), []string{carol, bob}, 0},
		{"Block of someone else, addressed to this inbox", block(carol, "Block"), []string{bob}, 1},
		{"no actors configured: the caller chose the inbox", block(bob, "Block"), nil, 1},
	})
}

// TestAddressingDecidesDelivery: with actors configured, only activities
// addressed to them, to Public or to a declared followers collection are
// delivered; without actors, everything is.
func TestAddressingDecidesDelivery(t *testing.T) {
	note := func(fields map[string]any) map[string]any {
		a := map[string]any{"id": "https://example.com/activities/1", "type": "Create", "actor": alice,
			"object": map[string]any{"type": "Note", "content": "hi"}}
		for k, v := range fields {
			a[k] = v
		}
		return a
	}
	served := []string{bob}
	checkInboxGets(t, "/users/bob/inbox", []string{aliceFollowers}, []inboxCase{
		{"to a string", note(map[string]any{"to": bob}), served, 1},
		{"cc an array", note(map[string]any{"cc": []any{carol, bob}}), served, 1},
		{"bto an object with id", note(map[string]any{"bto": map[string]any{"id": bob}}), served, 1},
		{"bcc an array of objects", note(map[string]any{"bcc": []any{map[string]any{"id": bob, "type": "Person"}}}), served, 1},
		{"audience", note(map[string]any{"audience": bob}), served, 1},
		{"Public", note(map[string]any{"to": Public}), served, 1},
		{"as:Public", note(map[string]any{"cc": []any{"as:Public"}}), served, 1},
		{"Public, compacted", note(map[string]any{"to": "Public"}), served, 1},
		{"declared followers collection", note(map[string]any{"cc": aliceFollowers}), served, 1},
		{"another followers collection", note(map[string]any{"cc": carol + "/followers"}), served, 0},
		{"someone else", note(map[string]any{"to": carol}), served, 0},
		{"nobody", note(nil), served, 0},
		{"an unusable value", note(map[string]any{"to": 42}), served, 0},
		{"no actors: everything", note(map[string]any{"to": carol}), nil, 1},
		{"no actors, no addressing", note(nil), nil, 1},
	})
}

// TestRetryIsResignedWithAFreshDate: a retry hours later carries the retry's
// Date and a new signature, which a receiver accepts, while the first
// attempt's Date is outside the receiver's window by then.
func TestRetryIsResignedWithAFreshDate(t *testing.T) {
	first, retry := at, at.Add(2*time.Hour)
	in := newInbox(t, retry) // the receiver's clock when the retry arrives
	reg := registration(in.url("/users/bob/inbox"), schemeConfig(t, SchemeCavage, []string{bob}, nil))
	msg := projtest.One(t, New(), record(t, "https://example.com/a/1", map[string]any{"type": "Like", "to": bob, "object": "https://x.example/o"}), reg)

	if out := projtest.Deliver(t, reg.URL, msg, first); out.Status != http.StatusUnauthorized || !strings.Contains(string(out.Body), "outside") {
		t.Fatalf("first attempt's date at the retry's clock: %s; want 401 for the Date window", projtest.Failure(out))
	}
	if out := projtest.Deliver(t, reg.URL, msg, retry); !out.OK() || out.Status != http.StatusAccepted {
		t.Fatalf("retry: %s", projtest.Failure(out))
	}
	got := in.Received()
	if len(got) != 1 || got[0].header.Get("Date") != retry.Format(http.TimeFormat) {
		t.Fatalf("accepted %d deliveries, Date %q; want the retry's %q", len(got), got[0].header.Get("Date"), retry.Format(http.TimeFormat))
	}

	// Signing the same request again replaces Date, Digest and Signature.
	req, err := projtest.NewRequest(t, reg.URL, msg, first)
	if err != nil {
		t.Fatal(err)
	}
	sig1 := req.Header.Get("Signature")
	if err := msg.Signer.Sign(req, msg.Body, retry); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"Date", "Digest", "Signature"} {
		if n := len(req.Header.Values(h)); n != 1 {
			t.Errorf("%s appears %d times after re-signing", h, n)
		}
	}
	if req.Header.Get("Date") != retry.Format(http.TimeFormat) || req.Header.Get("Signature") == sig1 {
		t.Errorf("re-signing kept the old Date or signature")
	}
	if err := verifySignature(req, in.pub); err != nil {
		t.Errorf("re-signed request: %v", err)
	}
}

// TestGolden pins the exact request of one draft-cavage delivery at a fixed instant:
// headers (Date, Digest, the rsa-sha256 Signature, which PKCS#1 v1.5 makes
// deterministic) and body (bto/bcc removed from the activity and its Note).
func TestGolden(t *testing.T) {
	rec := journal.Record{Stream: "actor/alice", Seq: 1, ID: "https://example.com/users/alice/statuses/1/activity",
		Kind: "Create", ContentType: ContentType, Payload: projtest.Testdata(t, "activitypub/create-note.json")}
	reg := registration("https://remote.example/users/bob/inbox", schemeConfig(t, SchemeCavage, []string{bob}, []string{aliceFollowers}))
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msg := projtest.One(t, New(), rec, reg)
	req, err := projtest.NewRequest(t, reg.URL, msg, at)
	if err != nil {
		t.Fatal(err)
	}
	_, pub := testKey(t)
	if err := verifySignature(req, pub); err != nil {
		t.Fatalf("golden request does not verify: %v", err)
	}
	projtest.Golden(t, "activitypub/create-note.golden", projtest.Render(t, reg.URL, msg, at))
}
