package activitypub

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

// at is the instant the tests deliver at; receivers' clocks are set from it.
var at = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func record(t testing.TB, id string, activity any) journal.Record {
	t.Helper()
	b, err := json.Marshal(activity)
	if err != nil {
		t.Fatal(err)
	}
	return journal.Record{Stream: "actor/alice", Seq: 1, ID: id, Kind: "activity", ContentType: ContentType, Payload: b}
}

func registration(url string, cfg push.Config) push.Registration {
	return push.Registration{Stream: "actor/alice", ID: url, Namespace: Namespace, URL: url, Config: cfg, NextSeq: 1}
}

// without returns a copy of m without keys.
func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// TestCorpusActivitiesDelivered delivers every activity of the Activity
// Streams corpus to a verifying inbox: signature, Digest, Date window, no
// bto/bcc, and content otherwise unchanged.
func TestCorpusActivitiesDelivered(t *testing.T) {
	dir := projtest.Corpus(t, "activitystreams")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no activities in %s (%v)", dir, err)
	}
	ctx := context.Background()
	in := newInbox(t, at)
	p := New()
	reg := registration(in.url("/users/bob/inbox"), config(t, []string{bob}, []string{aliceFollowers}))
	sawHidden := false
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), "-jsonld.json")
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var act map[string]any
		if err := json.Unmarshal(raw, &act); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
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
		msgs, err := p.Messages(ctx, rec, reg)
		if err != nil {
			t.Fatalf("%s: Messages: %v", name, err)
		}
		if len(msgs) != 1 {
			t.Fatalf("%s: %d messages, want 1", name, len(msgs))
		}
		if msgs[0].ID != rec.ID {
			t.Errorf("%s: message id %q, want the record id %q", name, msgs[0].ID, rec.ID)
		}
		if out := projtest.Deliver(t, reg.URL, msgs[0], at); !out.OK() || out.Status != http.StatusAccepted {
			t.Fatalf("%s: delivery: %s", name, projtest.Failure(out))
		}
		got := in.received()
		want := without(act, "bto", "bcc")
		roundTrip(t, &want)
		if last := got[len(got)-1].activity; !reflect.DeepEqual(last, want) {
			t.Errorf("%s: delivered activity differs beyond bto/bcc:\n got %v\nwant %v", name, last, want)
		}
	}
	if n := len(in.received()); n != len(files) {
		t.Fatalf("inbox accepted %d of %d activities", n, len(files))
	}
	if !sawHidden {
		t.Fatal("the corpus has no activity with bto or bcc: the removal was not exercised")
	}
}

func roundTrip(t testing.TB, m *map[string]any) {
	b, err := json.Marshal(*m)
	if err != nil {
		t.Fatal(err)
	}
	*m = nil
	if err := json.Unmarshal(b, m); err != nil {
		t.Fatal(err)
	}
}

// corpusBlockOf returns the corpus's first Block whose object is a string
// id, failing the test when it has none.
func corpusBlockOf(t *testing.T) map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(projtest.Corpus(t, "activitystreams"), "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var act map[string]any
		if err := json.Unmarshal(raw, &act); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, ok := act["object"].(string); ok && act["type"] == "Block" {
			return act
		}
	}
	t.Fatalf("the corpus has no Block of a string id among %d activities", len(files))
	return nil
}

// TestBlockNeverDeliveredToBlockedActor: a Block is not sent to an inbox that
// serves its object, however the object is written; it is sent elsewhere.
func TestBlockNeverDeliveredToBlockedActor(t *testing.T) {
	corpusBlock := corpusBlockOf(t) // in the shared corpus, ex173: "Sally blocked Joe"
	joe := corpusBlock["object"].(string)
	corpusBlock["id"], corpusBlock["to"] = "https://example.com/blocks/0", joe

	block := func(object any, typ any) map[string]any {
		return map[string]any{"id": "https://example.com/blocks/1", "type": typ, "actor": alice, "object": object, "to": []any{bob}}
	}
	cases := []struct {
		name     string
		activity map[string]any
		actors   []string
		want     int
	}{
		{"corpus Block to the blocked actor's inbox", corpusBlock, []string{joe}, 0},
		{"object as a string id", block(bob, "Block"), []string{bob}, 0},
		{"object with an id", block(map[string]any{"id": bob, "type": "Person"}, "Block"), []string{bob}, 0},
		{"object array containing the actor", block([]any{carol, bob}, "Block"), []string{bob}, 0},
		{"type array", block(bob, []any{"Block"}), []string{bob}, 0},
		{"type as:Block", block(bob, "as:Block"), []string{bob}, 0},
		{"inbox serving another actor too", block(bob, "Block"), []string{carol, bob}, 0},
		{"Block of someone else, addressed to this inbox", block(carol, "Block"), []string{bob}, 1},
		{"no actors configured: the caller chose the inbox", block(bob, "Block"), nil, 1},
	}
	p := New()
	in := newInbox(t, at)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := registration(in.url("/inbox"), config(t, c.actors, nil))
			msgs, err := p.Messages(context.Background(), record(t, c.activity["id"].(string), c.activity), reg)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != c.want {
				t.Fatalf("%d messages, want %d", len(msgs), c.want)
			}
			for _, m := range msgs {
				if out := projtest.Deliver(t, reg.URL, m, at); !out.OK() || out.Status != http.StatusAccepted {
					t.Fatalf("delivery: %s", projtest.Failure(out))
				}
			}
		})
	}
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
	cases := []struct {
		name     string
		activity map[string]any
		actors   []string
		want     int
	}{
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
	}
	p := New()
	in := newInbox(t, at)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var followers []string
			if c.actors != nil {
				followers = []string{aliceFollowers}
			}
			reg := registration(in.url("/users/bob/inbox"), config(t, c.actors, followers))
			msgs, err := p.Messages(context.Background(), record(t, "https://example.com/activities/1", c.activity), reg)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != c.want {
				t.Fatalf("%d messages, want %d", len(msgs), c.want)
			}
			for _, m := range msgs {
				if out := projtest.Deliver(t, reg.URL, m, at); !out.OK() || out.Status != http.StatusAccepted {
					t.Fatalf("delivery: %s", projtest.Failure(out))
				}
			}
		})
	}
}

// TestBtoBccRemovedKeepingEverythingElse pins the removal on the activity
// and its embedded object, member order and value bytes kept, and a payload
// without them sent byte for byte.
func TestBtoBccRemovedKeepingEverythingElse(t *testing.T) {
	p := New()
	reg := registration("https://remote.example/users/bob/inbox", config(t, nil, nil))
	cases := []struct{ in, want string }{
		{`{"type":"Create","bcc":["x"],"to":  [ "a" ],"object":{"type":"Note","bto":"y","content":"é"},"bto":"z"}`,
			`{"type":"Create","to":[ "a" ],"object":{"type":"Note","content":"é"}}`},
		{`{"type":"Create","object":[{"type":"Note","bcc":"b"},"https://x.example/o",{"type":"Note"}]}`,
			`{"type":"Create","object":[{"type":"Note"},"https://x.example/o",{"type":"Note"}]}`},
		{"{\n  \"type\": \"Like\",\n  \"object\": \"https://x.example/o\"\n}\n", "{\n  \"type\": \"Like\",\n  \"object\": \"https://x.example/o\"\n}\n"},
		{`{"type":"Create","\u0062cc":"escaped key"}`, `{"type":"Create"}`},
	}
	for _, c := range cases {
		rec := journal.Record{ID: "r", Seq: 1, Payload: []byte(c.in)}
		msgs, err := p.Messages(context.Background(), rec, reg)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := string(msgs[0].Body); got != c.want {
			t.Errorf("body of %s\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// TestInvalidPayloadIsAnError: a payload that is not an activity is this
// plane's fault, reported as an error wrapping journal.ErrInvalid.
func TestInvalidPayloadIsAnError(t *testing.T) {
	p := New()
	reg := registration("https://remote.example/users/bob/inbox", config(t, []string{bob}, nil))
	for _, payload := range []string{``, `not json`, `[]`, `"Create"`, `null`, `{}`, `{"type":3}`, `{"type":""}`, `{"type":[]}`, `{"type":["Create",""]}`, `{"type":"Create"} {}`} {
		_, err := p.Messages(context.Background(), journal.Record{ID: "r1", Seq: 7, Payload: []byte(payload)}, reg)
		if !errors.Is(err, journal.ErrInvalid) || !strings.Contains(err.Error(), "payload") || !strings.Contains(err.Error(), "r1") {
			t.Errorf("payload %q: error %v, want one wrapping ErrInvalid naming the record and the payload", payload, err)
		}
	}
	_, err := p.Messages(context.Background(), journal.Record{ID: "r1", Payload: []byte(`{"type":"Like"}`)}, registration(reg.URL, push.Config(`{"key_id":"x"}`)))
	if !errors.Is(err, journal.ErrInvalid) {
		t.Errorf("bad config: error %v, want ErrInvalid", err)
	}
}

// TestRetryIsResignedWithAFreshDate: a retry hours later carries the retry's
// Date and a new signature, which a receiver accepts, while the first
// attempt's Date is outside the receiver's window by then.
func TestRetryIsResignedWithAFreshDate(t *testing.T) {
	p := New()
	first, retry := at, at.Add(2*time.Hour)
	in := newInbox(t, retry) // the receiver's clock when the retry arrives
	reg := registration(in.url("/users/bob/inbox"), config(t, []string{bob}, nil))
	msgs, err := p.Messages(context.Background(), record(t, "https://example.com/a/1", map[string]any{"type": "Like", "to": bob, "object": "https://x.example/o"}), reg)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Messages: %v, %d", err, len(msgs))
	}
	msg := msgs[0]

	if out := projtest.Deliver(t, reg.URL, msg, first); out.Status != http.StatusUnauthorized || !strings.Contains(string(out.Body), "outside") {
		t.Fatalf("first attempt's date at the retry's clock: %s; want 401 for the Date window", projtest.Failure(out))
	}
	if out := projtest.Deliver(t, reg.URL, msg, retry); !out.OK() || out.Status != http.StatusAccepted {
		t.Fatalf("retry: %s", projtest.Failure(out))
	}
	got := in.received()
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

// TestWorkerDeliversInOrderAndAdvances runs a real push.Worker over a memory
// store: the activities reach the inbox in order, the Block to bob is
// skipped, and the cursor moves past all of them.
func TestWorkerDeliversInOrderAndAdvances(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	in := newInbox(t, at)
	entries := []journal.Entry{
		{ID: "https://example.com/a/1", Kind: "Create", Payload: []byte(`{"type":"Create","actor":"` + alice + `","to":"` + bob + `","object":{"type":"Note","content":"one"}}`)},
		{ID: "https://example.com/a/2", Kind: "Block", Payload: []byte(`{"type":"Block","actor":"` + alice + `","to":"` + bob + `","object":"` + bob + `"}`)},
		{ID: "https://example.com/a/3", Kind: "Like", Payload: []byte(`{"type":"Like","actor":"` + alice + `","cc":"` + Public + `","object":"https://x.example/o"}`)},
		{ID: "https://example.com/a/4", Kind: "Create", Payload: []byte(`{"type":"Create","actor":"` + alice + `","bcc":"` + bob + `","object":{"type":"Note","content":"four"}}`)},
	}
	if _, err := store.Append(ctx, "actor/alice", entries...); err != nil {
		t.Fatal(err)
	}
	w, err := push.NewWorker(store, store, projtest.Transport(t), New())
	if err != nil {
		t.Fatal(err)
	}
	reg := registration(in.url("/users/bob/inbox"), config(t, []string{bob}, nil))
	if _, err := w.Register(ctx, reg); err != nil {
		t.Fatal(err)
	}
	rep, err := w.RunOnce(ctx, at, 10)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 4 || rep.Deliveries != 3 || rep.Retries != 0 {
		t.Fatalf("report %+v: want 4 records, 3 deliveries, no retries", rep)
	}
	var ids []string
	for _, r := range in.received() {
		ids = append(ids, r.activity["type"].(string))
		if r.header.Get("Date") != at.Format(http.TimeFormat) {
			t.Errorf("Date %q, want the sweep's at %q", r.header.Get("Date"), at.Format(http.TimeFormat))
		}
	}
	if want := []string{"Create", "Like", "Create"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("received %v, want %v in order", ids, want)
	}
	st, err := store.Get(ctx, reg.Stream, reg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.NextSeq != 5 || st.Lag() != 0 {
		t.Fatalf("cursor %d (lag %d), want 5 (past all four records)", st.NextSeq, st.Lag())
	}
	rep, err = w.RunOnce(ctx, at.Add(time.Minute), 10)
	if err != nil || rep.Registrations != 0 {
		t.Fatalf("second sweep: %+v, %v; want nothing due", rep, err)
	}
}
