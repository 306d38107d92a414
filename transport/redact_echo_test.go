package transport_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// TestRedactEscapedEcho (found building the chaos harness): a receiver that
// echoes the request as JSON the way PHP's json_encode does, escaping "/" as
// "\/", echoed a standard-base64 bearer token in a form the redactor did
// not look for, and the token reached the evidence. Encoded echoes (JSON
// string escapes, percent-encoding, HTML) are redacted too now.
func TestRedactEscapedEcho(t *testing.T) {
	const token = "tok/0123456789+abcdef/ghijkl=="
	encodings := map[string]func(string) string{
		`JSON with \/`:    func(v string) string { return strings.ReplaceAll(v, "/", `\/`) },
		"percent-encoded": url.QueryEscape,
		"path-escaped":    url.PathEscape,
		"HTML":            html.EscapeString,
	}
	for name, encode := range encodings {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte(`{"error":"bad auth","authorization":"` + encode(r.Header.Get("Authorization")) + `"}`))
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
			if !strings.Contains(string(out.Body), "[redacted]") {
				t.Fatalf("nothing was redacted: %s", out.Body)
			}
			for _, form := range []string{token, encode(token), "0123456789+abcdef", "0123456789%2Babcdef"} {
				if strings.Contains(string(out.Body), form) {
					t.Fatalf("the evidence body keeps the token as %q: %s", form, out.Body)
				}
			}
		})
	}
}

// A record's kind, stream and seq (the webhook projection's Herald-
// headers) are no secret: a receiver's refusal that names them keeps them
// in the evidence, where an operator looks for what was refused.
func TestHeraldHeadersStayInEvidence(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no handler for "+r.Header.Get("Herald-Kind")+" of "+r.Header.Get("Herald-Stream")+" #"+r.Header.Get("Herald-Seq"), http.StatusUnprocessableEntity)
	}))
	defer srv.Close()
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	msg := push.Message{ID: "m1", ContentType: "application/json", Body: []byte(`{}`), Header: http.Header{
		"Herald-Kind": {"order.created.v2"}, "Herald-Stream": {"tenant/42-orders"}, "Herald-Seq": {"123456789"}}}
	out, err := tr.Deliver(context.Background(), push.Registration{Stream: "tenant/42-orders", ID: "r", URL: srv.URL}, msg, at)
	if err != nil {
		t.Fatal(err)
	}
	if want := "no handler for order.created.v2 of tenant/42-orders #123456789"; !strings.Contains(string(out.Body), want) {
		t.Fatalf("evidence body %q, want %q", out.Body, want)
	}
}
