package activitypub

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
)

// rfcVector reads a published value of RFC 9421 Appendix B
// (testdata/rfc9421/README.md), without its final newline.
func rfcVector(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/rfc9421/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// rfcTestRequest is RFC 9421 Appendix B.2's test request (its headers as
// the RFC gives them, Content-Length among them).
func rfcTestRequest(t *testing.T) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://example.com/foo?param=Value&Pet=dog", strings.NewReader(`{"hello": "world"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Date", "Tue, 20 Apr 2021 02:07:55 GMT")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Digest", "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:")
	req.Header.Set("Content-Length", "18")
	return req
}

// TestSignatureBaseAndEd25519SignatureAreRFC9421B26s: herald's signature
// base, Signature-Input and ed25519 signature of the RFC's test request
// with its test key are Appendix B.2.6's, byte for byte.
func TestSignatureBaseAndEd25519SignatureAreRFC9421B26s(t *testing.T) {
	key, err := parsePrivateKey(rfcVector(t, "test-key-ed25519.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := key.(ed25519.PrivateKey); !ok {
		t.Fatalf("test-key-ed25519 parsed as %T", key)
	}
	params := signatureParams([]string{"date", "@method", "@path", "@authority", "content-type", "content-length"},
		time.Unix(1618884473, 0), "test-key-ed25519", "")
	base, err := signatureBase(rfcTestRequest(t), params)
	if err != nil {
		t.Fatal(err)
	}
	if want := rfcVector(t, "b26-signature-base.txt"); base != want {
		t.Fatalf("signature base:\n%s\nwant (RFC 9421 B.2.6):\n%s", base, want)
	}
	input := httpsfv.NewDictionary()
	input.Add("sig-b26", params)
	if got, _ := httpsfv.Marshal(input); got != rfcVector(t, "b26-signature-input.txt") {
		t.Fatalf("Signature-Input %s, want %s", got, rfcVector(t, "b26-signature-input.txt"))
	}
	sig, err := signBytes(key, algEd25519, []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if got := "sig-b26=:" + base64.StdEncoding.EncodeToString(sig) + ":"; got != rfcVector(t, "b26-signature.txt") {
		t.Fatalf("Signature %s, want %s", got, rfcVector(t, "b26-signature.txt"))
	}
}

// TestContentDigestIsRFC9530s: the Content-Digest of RFC 9530 §2's example
// body, {"hello": "world"}, is the RFC's sha-256 value.
func TestContentDigestIsRFC9530s(t *testing.T) {
	got, err := contentDigest([]byte(`{"hello": "world"}`))
	if err != nil || got != "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:" {
		t.Fatalf("Content-Digest %q, %v", got, err)
	}
}

// TestTargetURIIsWhatTheReceiverRebuilds: @target-uri and @authority drop
// the scheme's default port and keep the path's escapes and the query, as
// the receiver rebuilds them from Host and the request line.
func TestTargetURIIsWhatTheReceiverRebuilds(t *testing.T) {
	for raw, want := range map[string][2]string{
		"https://Remote.Example:443/users/b%2Fob/inbox?x=1": {"https://remote.example/users/b%2Fob/inbox?x=1", "remote.example"},
		"http://127.0.0.1:8080/inbox":                       {"http://127.0.0.1:8080/inbox", "127.0.0.1:8080"},
		"http://example.com:80":                             {"http://example.com/", "example.com"},
	} {
		req, err := http.NewRequest(http.MethodPost, raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		target, _ := componentValue(req, "@target-uri")
		auth, _ := componentValue(req, "@authority")
		if target != want[0] || auth != want[1] {
			t.Errorf("%s: @target-uri %q, @authority %q; want %q", raw, target, auth, want)
		}
	}
}
