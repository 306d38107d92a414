// Package projtest holds what the projections' tests share: golden files,
// delivery through herald's HTTP transport to loopback receivers, and the
// checks every projection's config and messages pass. Only tests import it.
package projtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldpush/herald/internal/corpustest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/transport"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// Testdata returns the file at path under the repository's testdata.
func Testdata(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpustest.Repo(t), "testdata", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Golden compares got with the file name under testdata/golden (e.g.
// "a2a/v0.3-task.http"); with -update it first writes got there.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join(corpustest.Repo(t), "testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Render is the request for msg to url at at as a golden file holds it:
// message id, request line, headers but User-Agent, body.
func Render(t testing.TB, url string, msg push.Message, at time.Time) []byte {
	t.Helper()
	req, err := NewRequest(t, url, msg, at)
	if err != nil {
		t.Fatalf("request for %s: %v", msg.ID, err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "message id: %s\n%s %s\n", msg.ID, req.Method, req.URL)
	for _, k := range slices.Sorted(maps.Keys(req.Header)) {
		for _, v := range req.Header[k] {
			if k != "User-Agent" {
				fmt.Fprintf(&b, "%s: %s\n", k, v)
			}
		}
	}
	b.WriteString("\n")
	b.Write(msg.Body)
	return b.Bytes()
}

var loopback = sync.OnceValues(func() (*transport.HTTP, error) {
	return transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true})
})

// Transport is herald's HTTP transport, allowing http:// and loopback.
func Transport(t testing.TB) *transport.HTTP {
	t.Helper()
	tr, err := loopback()
	if err != nil {
		t.Fatalf("transport: %v", err)
	}
	return tr
}

// NewRequest is the request Transport would send for msg to url at at.
func NewRequest(t testing.TB, url string, msg push.Message, at time.Time) (*http.Request, error) {
	return Transport(t).NewRequest(t.Context(), push.Registration{Stream: "test", ID: "receiver", URL: url}, msg, at)
}

// Deliver sends msg to url through Transport as a sweep would at at.
func Deliver(t testing.TB, url string, msg push.Message, at time.Time) push.Outcome {
	t.Helper()
	out, err := Transport(t).Deliver(t.Context(), push.Registration{Stream: "test", ID: "receiver", URL: url}, msg, at)
	if err != nil {
		t.Fatalf("deliver %s to %s: %v", msg.ID, url, err)
	}
	return out
}

// Failure describes an outcome that is not the one a test wanted.
func Failure(out push.Outcome) string {
	return fmt.Sprintf("%s, status %d: %s; body %q", out.Verdict, out.Status, out.Reason, out.Body)
}

// Worker is a worker of p over db, with Transport, that registered regs.
func Worker(t testing.TB, db *memory.Store, p push.Projection, regs ...push.Registration) *push.Worker {
	t.Helper()
	w, err := push.NewWorker(db, db, Transport(t), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range regs {
		if _, err := w.Register(t.Context(), r); err != nil {
			t.Fatalf("register %s: %v", r.ID, err)
		}
	}
	return w
}

// Receiver is a loopback HTTP server that checks each request with the
// function it was made with: an error is answered 401 with its text;
// otherwise it keeps what the check made of the request and answers its
// status.
type Receiver[D any] struct {
	*httptest.Server
	mu  sync.Mutex
	got []D
}

// NewReceiver starts a Receiver answering status to the requests check
// passes, closed when the test ends.
func NewReceiver[D any](t testing.TB, status int, check func(r *http.Request, body []byte) (D, error)) *Receiver[D] {
	rc := &Receiver[D]{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var d D
		if err == nil {
			d, err = check(r, body)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		rc.mu.Lock()
		rc.got = append(rc.got, d)
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// Received is what the receiver kept, in the order it received it.
func (rc *Receiver[D]) Received() []D {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// Record is what the journal stores at seq 1 of stream for e, or false
// when it refuses e (no projection ever sees that).
func Record(stream string, e journal.Entry) (journal.Record, bool) {
	entries, err := journal.ValidateEntries(stream, []journal.Entry{e}, 0)
	if err != nil {
		return journal.Record{}, false
	}
	e = entries[0]
	return journal.Record{Stream: stream, Seq: 1, ID: e.ID, Kind: e.Kind, ContentType: e.ContentType, Payload: e.Payload, Final: e.Final}, true
}

// Messages returns p's messages for rec and reg, or refused when p refuses
// them wrapping journal.ErrInvalid; any other error fails the test.
func Messages(t testing.TB, p push.Projection, rec journal.Record, reg push.Registration) (msgs []push.Message, refused bool) {
	t.Helper()
	msgs, err := p.Messages(t.Context(), rec, reg)
	if err != nil && !errors.Is(err, journal.ErrInvalid) {
		t.Fatalf("Messages(%q): %v does not wrap journal.ErrInvalid", rec.Payload, err)
	}
	return msgs, err != nil
}

// One is the message p gives for rec and reg, failing on anything else.
func One(t testing.TB, p push.Projection, rec journal.Record, reg push.Registration) push.Message {
	t.Helper()
	msgs, err := p.Messages(t.Context(), rec, reg)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Messages(%s): %d messages, %v; want one", rec.ID, len(msgs), err)
	}
	return msgs[0]
}

// BenchMessages runs the sub-benchmark name: p's Messages for rec and reg,
// allocations reported, failing on an error.
func BenchMessages(b *testing.B, name string, p push.Projection, rec journal.Record, reg push.Registration) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Messages(b.Context(), rec, reg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Pure checks that p gives reg byte-identical requests, call after call,
// for recs in turn (one record in several forms), with its id as theirs.
func Pure(t *testing.T, p push.Projection, reg push.Registration, recs ...journal.Record) {
	t.Helper()
	first := One(t, p, recs[0], reg)
	if first.ID != recs[0].ID {
		t.Errorf("message id %q, want the record id %q", first.ID, recs[0].ID)
	}
	want := Render(t, reg.URL, first, time.Time{})
	for i := range 50 {
		if got := Render(t, reg.URL, One(t, p, recs[i%len(recs)], reg), time.Time{}); !bytes.Equal(got, want) {
			t.Fatalf("call %d differs:\n%s\n---\n%s", i, got, want)
		}
	}
}

// RegisterValidates checks that a worker of p refuses reg with the config
// bad, with a *journal.InvalidError naming field, and stores it with the
// config good.
func RegisterValidates(t *testing.T, p push.Projection, reg push.Registration, bad, field, good string) {
	t.Helper()
	w := Worker(t, memory.New(), p)
	reg.Config = push.Config(bad)
	_, err := w.Register(t.Context(), reg)
	var inv *journal.InvalidError
	if !errors.As(err, &inv) || inv.Field != field {
		t.Fatalf("Register with %s: %v, want an invalid %s", bad, err, field)
	}
	reg.Config = push.Config(good)
	if _, err := w.Register(t.Context(), reg); err != nil {
		t.Fatalf("Register with %s: %v", good, err)
	}
}

// Refusal is a config a projection refuses, the field its error names and
// words of the reason.
type Refusal struct{ Name, Raw, Field, Reason string }

// Refuses checks that parse refuses each config with a *journal.InvalidError
// (alone or joined) naming the field with the words and none of secrets, and
// that p.ValidateConfig says the same.
func Refuses[C any](t *testing.T, parse func(push.Config) (C, error), p push.ConfigValidator, secrets []string, cases ...Refusal) {
	t.Helper()
	for _, c := range cases {
		name := c.Name
		if name == "" {
			name = fmt.Sprintf("%.40s", c.Raw)
		}
		t.Run(name, func(t *testing.T) {
			_, err := parse(push.Config(c.Raw))
			if !errors.Is(err, journal.ErrInvalid) || !names(err, c.Field, c.Reason) {
				t.Fatalf("error %v, want a *journal.InvalidError naming %s with %q", err, c.Field, c.Reason)
			}
			for _, s := range secrets {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("error %q repeats a secret", err)
				}
			}
			if verr := p.ValidateConfig(push.Registration{Config: push.Config(c.Raw)}); verr == nil || verr.Error() != err.Error() {
				t.Errorf("ValidateConfig = %v, want the same error as ParseConfig", verr)
			}
		})
	}
}

func names(err error, field, words string) bool {
	if ie, ok := err.(*journal.InvalidError); ok {
		return ie.Field == field && strings.Contains(ie.Reason, words)
	}
	j, ok := err.(interface{ Unwrap() []error })
	return ok && slices.ContainsFunc(j.Unwrap(), func(e error) bool { return names(e, field, words) })
}

// Printed is values as fmt prints them with %v, %+v, %#v, %s, %q and %x.
func Printed(values ...any) []string {
	var out []string
	for _, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			out = append(out, fmt.Sprintf(verb, v))
		}
	}
	return out
}

// Logged is v as slog's JSON and text handlers log it.
func Logged(v any) []string {
	var j, txt bytes.Buffer
	slog.New(slog.NewJSONHandler(&j, nil)).Info("registered", "config", v)
	slog.New(slog.NewTextHandler(&txt, nil)).Info("registered", "config", v)
	return []string{j.String(), txt.String()}
}

// Strings returns the strings a JSON object holds under keys, in any case
// (as encoding/json matches them), alone or in an array.
func Strings(raw []byte, keys ...string) []string {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(raw, &obj)
	var out []string
	for k, v := range obj {
		var one string
		var many []string
		if !slices.ContainsFunc(keys, func(key string) bool { return strings.EqualFold(k, key) }) {
			continue
		} else if json.Unmarshal(v, &one) == nil {
			out = append(out, one)
		} else if json.Unmarshal(v, &many) == nil {
			out = append(out, many...)
		}
	}
	return out
}

// ConfigFuzz is what FuzzParseConfig checks of a ParseConfig: no panic; a
// refusal wraps journal.ErrInvalid and repeats no secret outside the
// config's keys (its path, "config.key", or a key quoted) and the quoted
// values; no fmt verb prints an accepted secret.
type ConfigFuzz[C any] struct {
	Parse    func(push.Config) (C, error)
	Secrets  func(raw []byte) (secrets, quoted []string)
	Printed  func(C) []string            // the secrets of an accepted config
	Accepted func(*testing.T, []byte, C) // if set, checks more of it
}

// Fuzz runs the checks from seeds.
func (z ConfigFuzz[C]) Fuzz(f *testing.F, seeds ...string) {
	for _, seed := range seeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := z.Parse(push.Config(raw))
		secrets, quoted := z.Secrets(raw)
		if err != nil {
			if !errors.Is(err, journal.ErrInvalid) {
				t.Fatalf("ParseConfig: %v does not wrap journal.ErrInvalid", err)
			}
			said := err.Error()
			if i, j := strings.Index(said, "unknown key "), strings.LastIndex(said, " (known: "); i >= 0 && j > i {
				said = said[:i] + said[j:]
			}
			for _, q := range quoted {
				said = strings.ReplaceAll(said, q, "")
			}
			for _, k := range keysOf(raw) {
				said = strings.ReplaceAll(strings.ReplaceAll(said, "."+k, ""), strconv.Quote(k), "")
			}
			for _, s := range secrets {
				if strings.Contains(said, s) {
					t.Fatalf("ParseConfig's error %q repeats the secret %q", err, s)
				}
			}
			return
		}
		if z.Accepted != nil {
			z.Accepted(t, raw, c)
		}
		v := any(c)
		printed := fmt.Sprintf("%v %+v %#v %s %q", v, v, v, v, v)
		for _, s := range z.Printed(c) {
			if strings.Contains(printed, s) {
				t.Fatalf("a fmt verb prints a secret: %s", printed)
			}
		}
	})
}

// keysOf lists the object keys in raw, at any depth, as encoding/json reads
// them, up to where it cannot read on.
func keysOf(raw []byte) []string {
	type frame struct{ object, wantKey bool }
	var keys []string
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch {
		case tok == json.Delim('}') || tok == json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		case top != nil && top.object && top.wantKey:
			keys = append(keys, tok.(string))
			top.wantKey = false
			continue
		case top != nil && top.object:
			top.wantKey = true // this value ends, then a key or '}'
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &frame{object: d == '{', wantKey: d == '{'})
		}
	}
}
