package cloudevents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	ce "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/heraldpush/herald/internal/corpustest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

// received is what sdk-go's receiver decoded, with the headers it got.
type received struct {
	event         event.Event
	authorization string
	contentType   string
}

// sdkReceiver starts sdk-go's own HTTP receiver (client.StartReceiver on a
// loopback listener) and returns its URL and the channel its callback
// writes to. It stops when the test ends.
func sdkReceiver(t *testing.T) (string, <-chan received) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ce.NewHTTP(cehttp.WithListener(l), cehttp.WithRequestDataAtContextMiddleware())
	if err != nil {
		t.Fatal(err)
	}
	// ce.NewClient, not ce.NewClientHTTP: the latter fills in a missing id
	// and time on received events too, which would hide their absence.
	c, err := ce.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan received, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- c.StartReceiver(ctx, func(ctx context.Context, e event.Event) {
			rd := cehttp.RequestDataFromContext(ctx)
			ch <- received{event: e, authorization: rd.Header.Get("Authorization"), contentType: rd.Header.Get("Content-Type")}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("receiver: %v", err)
		}
	})
	return "http://" + l.Addr().String(), ch
}

// deliverTo posts msg and returns what the receiver decoded. sdk-go answers
// only after its callback returned, so the event is waiting on the channel;
// the timeout only guards against a hang.
func deliverTo(t *testing.T, url string, ch <-chan received, msg push.Message) received {
	t.Helper()
	if out := projtest.Deliver(t, url, msg, time.Time{}); !out.OK() {
		t.Fatalf("post %s: %s", msg.ID, projtest.Failure(out))
	}
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("post %s: accepted but the receiver's callback never ran", msg.ID)
		return received{}
	}
}

// TestGitHubCorpusReceivedBySDK appends every GitHub payload of the corpus
// as a record and delivers it, in binary and in structured content mode, to
// sdk-go's HTTP receiver, which must decode an event whose id, source, type,
// subject, time, datacontenttype and data are the record's, with the bearer
// token.
func TestGitHubCorpusReceivedBySDK(t *testing.T) {
	dir := corpustest.Dir(t, "github")
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := 4; corpustest.Shared() && len(files) < 100 || len(files) < want {
		t.Fatalf("found %d GitHub payloads under %s, want the shared corpus's 150 or testdata's %d", len(files), dir, want)
	}
	clock := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	db := memory.New(memory.WithClock(func() time.Time {
		clock = clock.Add(1500*time.Millisecond + 7*time.Nanosecond)
		return clock
	}))
	var recs []journal.Record
	for _, f := range files {
		payload, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		event := filepath.Base(filepath.Dir(f))
		got, err := db.Append(context.Background(), "github/octo-org/"+event, journal.Entry{
			ID: "gh-" + event + "-" + strings.TrimSuffix(filepath.Base(f), ".json"), Kind: "com.github." + event,
			ContentType: "application/json", Payload: payload})
		if err != nil {
			t.Fatalf("append %s: %v", f, err)
		}
		recs = append(recs, got...)
	}

	url, ch := sdkReceiver(t)
	p := cloudevents.New()
	const source = "https://github.com/octo-org"
	for _, mode := range []struct {
		name       string
		structured bool
	}{{"binary", false}, {"structured", true}} {
		t.Run(mode.name, func(t *testing.T) {
			reg := push.Registration{ID: "sink", Namespace: cloudevents.Namespace, URL: url,
				Config: push.Config(fmt.Sprintf(`{"source":%q,"structured":%t,"token":%q}`, source, mode.structured, secret))}
			for _, rec := range recs {
				reg.Stream = rec.Stream
				msgs, err := p.Messages(context.Background(), rec, reg)
				if err != nil {
					t.Fatalf("%s: %v", rec.ID, err)
				}
				if len(msgs) != 1 || msgs[0].ID != rec.ID {
					t.Fatalf("%s: got %d messages (first id %q), want one with the record id", rec.ID, len(msgs), msgs[0].ID)
				}
				r := deliverTo(t, url, ch, msgs[0])
				checkEvent(t, rec, source, mode.structured, r)
				if r.authorization != "Bearer "+secret {
					t.Errorf("%s: Authorization %q, want the bearer token", rec.ID, r.authorization)
				}
				wantCT := rec.ContentType
				if mode.structured {
					wantCT = cloudevents.StructuredContentType
				}
				if r.contentType != wantCT {
					t.Errorf("%s: Content-Type %q, want %q", rec.ID, r.contentType, wantCT)
				}
			}
		})
	}
}

// checkEvent compares what the receiver decoded with the record. The data
// must come back byte for byte, except JSON embedded in a structured event,
// which must come back as the same JSON value.
func checkEvent(t *testing.T, rec journal.Record, source string, structured bool, r received) {
	t.Helper()
	e := r.event
	if err := e.Validate(); err != nil {
		t.Errorf("%s: received event is invalid: %v", rec.ID, err)
	}
	if e.SpecVersion() != "1.0" || e.ID() != rec.ID || e.Source() != source || e.Type() != rec.Kind ||
		e.Subject() != rec.Stream || e.DataContentType() != rec.ContentType || !e.Time().Equal(rec.AppendedAt) {
		t.Errorf("%s: received specversion %q id %q source %q type %q subject %q datacontenttype %q time %v; want 1.0 %q %q %q %q %q %v",
			rec.ID, e.SpecVersion(), e.ID(), e.Source(), e.Type(), e.Subject(), e.DataContentType(), e.Time(),
			rec.ID, source, rec.Kind, rec.Stream, rec.ContentType, rec.AppendedAt)
	}
	embedded := structured && strings.HasPrefix(rec.ContentType, "application/json")
	if !bytes.Equal(e.Data(), rec.Payload) && !(embedded && sameJSON(e.Data(), rec.Payload)) {
		t.Errorf("%s: received data (%d bytes) differs from the payload (%d bytes)", rec.ID, len(e.Data()), len(rec.Payload))
	}
}

// sameJSON reports whether a and b are the same JSON value. Structured mode
// embeds JSON data as a JSON value, and sdk-go's receiver hands it back
// re-encoded (without the outer whitespace, with <, > and & escaped as
// \u003c…), so the bytes differ while the value does not.
func sameJSON(a, b []byte) bool {
	decode := func(data []byte) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil && !d.More()
	}
	va, okA := decode(a)
	vb, okB := decode(b)
	return okA && okB && reflect.DeepEqual(va, vb)
}

// TestContentTypesReceivedBySDK: payloads that are not application/json
// (raw bytes, text, another +json type) reach sdk-go's receiver intact in
// both content modes, and a structured event carries each as JSON format
// §3.1.1 says: JSON as a JSON value under "data", text as a string under
// "data", anything else base64 under "data_base64".
func TestContentTypesReceivedBySDK(t *testing.T) {
	url, ch := sdkReceiver(t)
	at := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	cases := []struct {
		rec    journal.Record
		member string // where a structured event carries the payload
		json   string // the JSON type of that member's value
	}{
		{journal.Record{Stream: "blobs/1", Seq: 1, ID: "blob-1", Kind: "com.example.blob", ContentType: "application/octet-stream",
			Payload: []byte{0, 0xff, 0xfe, '"', '\n', 0x80}, AppendedAt: at}, "data_base64", "string"},
		{journal.Record{Stream: "notes/1", Seq: 1, ID: "note-1", Kind: "com.example.note", ContentType: "text/plain; charset=utf-8",
			Payload: []byte("ça va? \"quoted\"\n\ttab"), AppendedAt: at}, "data", "string"},
		{journal.Record{Stream: "actor/alice", Seq: 1, ID: "https://social.example/alice/1", Kind: "Create", ContentType: "application/activity+json",
			Payload: []byte(`{"type":"Create","object":{"content":"héllo"}}`), AppendedAt: at}, "data_base64", "string"},
		{journal.Record{Stream: "json/1", Seq: 1, ID: "j-1", Kind: "com.example.json", ContentType: "application/json",
			Payload: []byte(" [1, 2.50, \"x\"] "), AppendedAt: at}, "data", "array"},
	}
	for _, structured := range []bool{false, true} {
		for _, c := range cases {
			rec := c.rec
			reg := push.Registration{Stream: rec.Stream, ID: "sink", Namespace: cloudevents.Namespace, URL: url,
				Config: push.Config(fmt.Sprintf(`{"source":"/herald","structured":%t}`, structured))}
			msgs, err := cloudevents.New().Messages(context.Background(), rec, reg)
			if err != nil {
				t.Fatalf("%s: %v", rec.ID, err)
			}
			if structured {
				checkDataMember(t, rec.ID, msgs[0].Body, c.member, c.json)
			} else if !bytes.Equal(msgs[0].Body, rec.Payload) {
				t.Errorf("%s: binary body %q, want the payload %q", rec.ID, msgs[0].Body, rec.Payload)
			}
			r := deliverTo(t, url, ch, msgs[0])
			checkEvent(t, rec, "/herald", structured, r)
			if r.authorization != "" {
				t.Errorf("%s: Authorization %q sent without a token", rec.ID, r.authorization)
			}
		}
	}
}

func checkDataMember(t *testing.T, id string, body []byte, member, kind string) {
	t.Helper()
	if !utf8.Valid(body) {
		t.Errorf("%s: structured body is not UTF-8", id)
		return
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		t.Errorf("%s: structured body is not a JSON object: %v", id, err)
		return
	}
	other := map[string]string{"data": "data_base64", "data_base64": "data"}[member]
	raw, ok := obj[member]
	if _, both := obj[other]; !ok || both {
		t.Errorf("%s: structured body has members %v, want %q and not %q", id, slices.Sorted(maps.Keys(obj)), member, other)
		return
	}
	got := map[byte]string{'"': "string", '[': "array", '{': "object"}[bytes.TrimSpace(raw)[0]]
	if got != kind {
		t.Errorf("%s: %q holds a JSON %s, want a %s: %s", id, member, got, kind, raw)
	}
}

// TestBinaryModePercentEncodesHeaderValues: in binary mode every ce- header
// value is percent-encoded as HTTP binding §3.1.3.2 says (space, '"', '%'
// and each UTF-8 byte outside printable ASCII as %XY, upper-case; the
// spec's own example among them), so the headers are printable ASCII;
// other values go as they are. sdk-go's receiver (v2.16.2) takes the
// event; it does not percent-decode (cloudevents/sdk-go#1331), so its
// attributes are the header text, and the one round of decoding §3.1.3.2
// asks of a receiver gives the record's values exactly. Structured mode
// carries them in JSON, and sdk-go reads them back as they are.
func TestBinaryModePercentEncodesHeaderValues(t *testing.T) {
	rec := journal.Record{Stream: "actor/zoë", Seq: 1, ID: "Euro € 😀", Kind: `com.example.café"100%"`,
		ContentType: "application/json", Payload: []byte(`{}`), AppendedAt: time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)}
	const source = "/caf%C3%A9" // a URI-reference is ASCII: sdk-go writes an IRI's ü as %C3%BC itself
	want := map[string]string{
		"Ce-Specversion": "1.0",
		"Ce-Id":          "Euro%20%E2%82%AC%20%F0%9F%98%80", // §3.1.3.2's example
		"Ce-Type":        "com.example.caf%C3%A9%22100%25%22",
		"Ce-Subject":     "actor/zo%C3%AB",
		"Ce-Source":      "/caf%25C3%25A9",
		"Ce-Time":        "2026-03-15T11:00:00Z",
	}
	url, ch := sdkReceiver(t)
	decode := func(v string) string { // §3.1.3.2: one round; invalid UTF-8 refused
		s, err := neturl.PathUnescape(v)
		if err != nil || !utf8.ValidString(s) {
			t.Fatalf("%q does not percent-decode to UTF-8: %v", v, err)
		}
		return s
	}
	for _, structured := range []bool{false, true} {
		reg := push.Registration{Stream: rec.Stream, ID: "sink", Namespace: cloudevents.Namespace, URL: url,
			Config: push.Config(fmt.Sprintf(`{"source":%q,"structured":%t}`, source, structured))}
		msgs, err := cloudevents.New().Messages(context.Background(), rec, reg)
		if err != nil {
			t.Fatal(err)
		}
		e := deliverTo(t, url, ch, msgs[0]).event
		if err := e.Validate(); err != nil {
			t.Errorf("structured %t: received event is invalid: %v", structured, err)
		}
		got := map[string]string{"id": e.ID(), "type": e.Type(), "subject": e.Subject(), "source": e.Source()}
		if !structured {
			for name, v := range want {
				if h := msgs[0].Header.Values(name); len(h) != 1 || h[0] != v {
					t.Errorf("binary %s: %q, want %q", name, h, v)
				}
			}
			if got["id"] != want["Ce-Id"] || got["source"] != want["Ce-Source"] {
				t.Errorf("sdk-go read id %q source %q: want the header text (it does not decode)", got["id"], got["source"])
			}
			for k, v := range got {
				got[k] = decode(v)
			}
		}
		if w := map[string]string{"id": rec.ID, "type": rec.Kind, "subject": rec.Stream, "source": source}; !maps.Equal(got, w) {
			t.Errorf("structured %t: received %q, want %q", structured, got, w)
		}
	}
}
