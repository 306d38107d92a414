// Package projtest holds what the projections' tests share: the corpus
// input (internal/corpustest), golden files under
// testdata/golden, and delivery through herald's own HTTP transport to a
// receiver on loopback. Only tests import it.
package projtest

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldpush/herald/internal/corpustest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// update is -update, defined in every test binary that imports projtest:
// go test ./projection/webhook -run Golden -update.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// Root returns the repository's root (the directory of go.mod).
func Root(t testing.TB) string {
	t.Helper()
	return corpustest.Repo(t)
}

// Corpus returns the directory sub of the input the corpus tests read:
// testdata/corpus, or the shared corpus when HERALD_CORPUS names it (see
// internal/corpustest). It fails the test when that cannot be read.
func Corpus(t testing.TB, sub string) string {
	t.Helper()
	return corpustest.Dir(t, sub)
}

// Golden compares got with the file name under testdata/golden (e.g.
// "a2a/v0.3-task.http"). With -update it first writes got there, for a
// change that is intended.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join(Root(t), "testdata", "golden", name)
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

// loopback is herald's HTTP transport with what a test receiver needs and
// production refuses by default: plain http:// and private addresses
// (loopback among them).
var loopback = sync.OnceValues(func() (*transport.HTTP, error) {
	return transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true})
})

// Transport returns herald's HTTP transport, allowing plain http:// and
// private addresses, loopback among them (every test in the process shares
// it, and its connections).
func Transport(t testing.TB) *transport.HTTP {
	t.Helper()
	tr, err := loopback()
	if err != nil {
		t.Fatalf("transport: %v", err)
	}
	return tr
}

// Deliver sends msg to url as a sweep would at the instant at, through
// Transport, and returns the outcome: Accepted on a 2xx; otherwise the
// verdict, the status, the start of the receiver's answer in Body, and the
// reason. It fails the test if ctx ends first.
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

// Render writes the request the transport would send for msg to url at at
// (transport.HTTP.NewRequest) as a golden file holds it: the message id, the
// request line, every header but User-Agent (the transport's, not the
// projection's) sorted by name, a blank line, and the body.
func Render(t testing.TB, url string, msg push.Message, at time.Time) []byte {
	t.Helper()
	req, err := NewRequest(t, url, msg, at)
	if err != nil {
		t.Fatalf("request for %s: %v", msg.ID, err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "message id: %s\n%s %s\n", msg.ID, req.Method, req.URL)
	for _, k := range slices.Sorted(maps.Keys(req.Header)) {
		if k == "User-Agent" {
			continue
		}
		for _, v := range req.Header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	b.Write(msg.Body)
	return b.Bytes()
}

// NewRequest is the request Transport would send for msg to url at at,
// built and signed but not sent (transport.HTTP.NewRequest). Tests use it to
// pin a request or to tamper with one.
func NewRequest(t testing.TB, url string, msg push.Message, at time.Time) (*http.Request, error) {
	t.Helper()
	return Transport(t).NewRequest(t.Context(), push.Registration{Stream: "test", ID: "receiver", URL: url}, msg, at)
}

// WithoutUnknownKey removes from an error text the unknown key a config's
// error names (configjson: "has an unknown key K (known: …)"): the key is
// the caller's input, not a secret, so a fuzz test that checks the error
// repeats no secret looks at the rest. Other texts come back unchanged.
func WithoutUnknownKey(said string) string {
	i := strings.Index(said, "unknown key ")
	j := strings.LastIndex(said, " (known: ")
	if i < 0 || j < i {
		return said
	}
	return said[:i] + said[j:]
}
