//go:build knownbugs

package transport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// TestBugRedactMissesAnEscapedEcho is a failing test for a bug found while
// building the chaos harness (it runs with -tags knownbugs until it is
// fixed; see RELIABILITY.md). The redactor removes the exact bytes of what
// an attempt sent (header values and their parts) from the answer kept as
// evidence. A receiver that echoes the request as JSON the way PHP's
// json_encode does, escaping "/" as "\/", echoes a bearer token in standard
// base64 in a form the redactor does not look for, and the token is kept in
// the evidence (herald evidence, the admin API). The same holds for other
// encodings of an echo (\u escapes, HTML entities, percent-encoding).
func TestBugRedactMissesAnEscapedEcho(t *testing.T) {
	const token = "tok/0123456789+abcdef/ghijkl=="
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echoed := strings.ReplaceAll(r.Header.Get("Authorization"), "/", `\/`)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":"bad auth","authorization":"` + echoed + `"}`))
	}))
	defer srv.Close()
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	msg := push.Message{ID: "m1", ContentType: "application/json", Body: []byte(`{}`), Header: http.Header{"Authorization": {"Bearer " + token}}}
	out, err := tr.Deliver(context.Background(), push.Registration{Stream: "s", ID: "r", URL: srv.URL + "/hook"}, msg, at)
	if err != nil {
		t.Fatal(err)
	}
	unescaped := strings.ReplaceAll(string(out.Body), `\/`, "/")
	if strings.Contains(unescaped, strings.TrimSuffix(token, "==")) {
		t.Fatalf("the evidence body keeps the token, JSON-escaped: %s", out.Body)
	}
}
