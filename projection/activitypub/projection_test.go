package activitypub

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
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

// TestBtoBccRemovedKeepingEverythingElse pins the removal on the activity
// and its embedded object, member order and value bytes kept, and a payload
// without them sent byte for byte.
func TestBtoBccRemovedKeepingEverythingElse(t *testing.T) {
	p := New()
	reg := registration("https://remote.example/users/bob/inbox", config(t, nil, nil))
	for _, c := range []struct{ in, want string }{
		{`{"type":"Create","bcc":["x"],"to":  [ "a" ],"object":{"type":"Note","bto":"y","content":"é"},"bto":"z"}`,
			`{"type":"Create","to":[ "a" ],"object":{"type":"Note","content":"é"}}`},
		{`{"type":"Create","object":[{"type":"Note","bcc":"b"},"https://x.example/o",{"type":"Note"}]}`,
			`{"type":"Create","object":[{"type":"Note"},"https://x.example/o",{"type":"Note"}]}`},
		{"{\n  \"type\": \"Like\",\n  \"object\": \"https://x.example/o\"\n}\n", "{\n  \"type\": \"Like\",\n  \"object\": \"https://x.example/o\"\n}\n"},
		{`{"type":"Create","\u0062cc":"escaped key"}`, `{"type":"Create"}`},
	} {
		if got := string(projtest.One(t, p, journal.Record{ID: "r", Seq: 1, Payload: []byte(c.in)}, reg).Body); got != c.want {
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

// FuzzMessages: an activity is what the application appended, often built
// from a remote server's data. Messages never panics; a payload that is not
// an activity is refused with journal.ErrInvalid; what goes out is a JSON
// object without bto or bcc.
func FuzzMessages(f *testing.F) {
	for _, seed := range []string{
		`{"@context":"https://www.w3.org/ns/activitystreams","type":"Create","id":"https://example.com/a/1","actor":"` + alice + `","to":["https://www.w3.org/ns/activitystreams#Public"],"object":{"type":"Note","content":"hi"}}`,
		`{"type":"Create","to":"` + bob + `","bto":["` + carol + `"],"bcc":"` + carol + `","object":{"type":"Note"}}`,
		`{"type":"Block","object":"` + bob + `","to":"` + bob + `"}`,
		`{"type":["Create","Update"],"to":[{"id":"` + bob + `"}],"cc":"` + aliceFollowers + `"}`,
		`{"type":"Create","bto":[1,2,{"x":null}],"bcc":{"a":"b"},"to":null}`,
		`{"type":""}`, `{"type":1}`, `{}`, `[]`, `null`, `"x"`, ``, `{"type":"Create","bto":"x"} trailing`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	p := New()
	configs := map[bool]push.Config{false: config(f, nil, nil), true: config(f, []string{bob}, []string{aliceFollowers})}
	f.Fuzz(func(t *testing.T, payload []byte, filtered bool) {
		reg := push.Registration{Stream: "actor/alice", ID: "inbox", Namespace: Namespace, URL: "https://remote.example/inbox", Config: configs[filtered]}
		rec, ok := projtest.Record(reg.Stream, journal.Entry{ID: "a1", Kind: "Create", ContentType: ContentType, Payload: payload})
		if !ok {
			return
		}
		msgs, _ := projtest.Messages(t, p, rec, reg)
		for _, m := range msgs {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(m.Body, &obj); err != nil {
				t.Fatalf("Messages(%q) sends %q, not a JSON object: %v", payload, m.Body, err)
			}
			if _, ok := obj["bto"]; ok {
				t.Fatalf("Messages(%q) sends bto: %s", payload, m.Body)
			}
			if _, ok := obj["bcc"]; ok {
				t.Fatalf("Messages(%q) sends bcc: %s", payload, m.Body)
			}
		}
	})
}

// TestWorkerDeliversInOrderAndAdvances runs a real push.Worker over a memory
// store: the activities reach the inbox in order, the Block to bob is
// skipped, and the cursor moves past all of them.
func TestWorkerDeliversInOrderAndAdvances(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	in := newInbox(t, at)
	entries := []journal.Entry{
		{ID: "https://example.com/a/1", Kind: "Create", Payload: []byte(`{"type":"Create","actor":"` + alice + `","to":"` + bob + `","object":{"type":"Note","content":"one"}}`)},
		{ID: "https://example.com/a/2", Kind: "Block", Payload: []byte(`{"type":"Block","actor":"` + alice + `","to":"` + bob + `","object":"` + bob + `"}`)},
		{ID: "https://example.com/a/3", Kind: "Like", Payload: []byte(`{"type":"Like","actor":"` + alice + `","cc":"` + Public + `","object":"https://x.example/o"}`)},
		{ID: "https://example.com/a/4", Kind: "Create", Payload: []byte(`{"type":"Create","actor":"` + alice + `","bcc":"` + bob + `","object":{"type":"Note","content":"four"}}`)},
	}
	if _, err := db.Append(ctx, "actor/alice", entries...); err != nil {
		t.Fatal(err)
	}
	reg := registration(in.url("/users/bob/inbox"), config(t, []string{bob}, nil))
	w := projtest.Worker(t, db, New(), reg)
	rep, err := w.RunOnce(ctx, at, 10)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 4 || rep.Deliveries != 3 || rep.Retries != 0 {
		t.Fatalf("report %+v: want 4 records, 3 deliveries, no retries", rep)
	}
	var ids []string
	for _, r := range in.Received() {
		ids = append(ids, r.activity["type"].(string))
		if r.header.Get("Date") != at.Format(http.TimeFormat) {
			t.Errorf("Date %q, want the sweep's at %q", r.header.Get("Date"), at.Format(http.TimeFormat))
		}
	}
	if want := []string{"Create", "Like", "Create"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("received %v, want %v in order", ids, want)
	}
	st, err := db.Get(ctx, reg.Stream, reg.ID)
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

// BenchmarkMessages measures the hot path, Messages, with the config cache
// warm (what a sweep sees), against parsing the config every time, and the
// signing done per attempt for scale.
func BenchmarkMessages(b *testing.B) {
	reg := registration("https://remote.example/users/bob/inbox", config(b, []string{bob}, []string{aliceFollowers}))
	withBcc := journal.Record{ID: "https://example.com/a/1", Seq: 1, Payload: projtest.Testdata(b, "activitypub/create-note.json")}
	plain := journal.Record{ID: "https://example.com/a/2", Seq: 2, Payload: []byte(`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://example.com/a/2","type":"Like","actor":"` + alice + `","to":"` + bob + `","object":"https://x.example/o"}`)}
	p := New()

	projtest.BenchMessages(b, "cached/plain", p, plain, reg)
	projtest.BenchMessages(b, "cached/bcc-removed", p, withBcc, reg)
	b.Run("uncached/plain", func(b *testing.B) {
		for b.Loop() {
			var c Config
			if err := projconfig.Decode(reg.Config, &c); err != nil {
				b.Fatal(err)
			}
			s, err := c.settings()
			if err != nil {
				b.Fatal(err)
			}
			a, err := parseActivity(plain.Payload)
			if err != nil || !s.wants(a) {
				b.Fatal(err)
			}
		}
	})
	msg := projtest.One(b, p, withBcc, reg)
	for _, scheme := range []string{SchemeRFC9421, SchemeCavage} {
		b.Run("sign/rsa/"+scheme, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, reg.URL, nil)
				if err := msg.Signer.(*Signer).SignScheme(req, msg.Body, at, scheme); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	edConfig, err := Config{KeyID: aliceKeyID, PrivateKey: edPEM(b), ProofKeyID: alice + "#multikey"}.Encode()
	if err != nil {
		b.Fatal(err)
	}
	edReg := registration(reg.URL, edConfig)
	proofRec := withBcc
	proofRec.AppendedAt = at
	b.Run("sign/ed25519/rfc9421", func(b *testing.B) {
		msg := projtest.One(b, p, proofRec, edReg)
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, reg.URL, nil)
			if err := msg.Signer.Sign(req, msg.Body, at); err != nil {
				b.Fatal(err)
			}
		}
	})
	projtest.BenchMessages(b, "cached/bcc-removed/proof", p, proofRec, edReg)
}
