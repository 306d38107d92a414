package activitypub

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-fed/httpsig"

	"github.com/heraldpush/herald/push"
)

const (
	alice          = "https://example.com/users/alice"
	aliceKeyID     = alice + "#main-key"
	aliceFollowers = alice + "/followers"
	bob            = "https://remote.example/users/bob"
	carol          = "https://other.example/users/carol"
)

// repoRoot is the repository root, seen from this package's directory.
var repoRoot = filepath.Join("..", "..")

func corpusDir(t testing.TB, sub string) string {
	t.Helper()
	dir := filepath.Join(repoRoot, "..", "shared", "corpus", sub)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the corpus is missing: %v (tests read ../shared/corpus beside the repository)", err)
	}
	return dir
}

var (
	keyOnce sync.Once
	keyPEM  string
	keyErr  error
)

// testKey returns the PEM of the test actor's key and its public half.
func testKey(t testing.TB) (string, *rsa.PublicKey) {
	t.Helper()
	keyOnce.Do(func() {
		var b []byte
		b, keyErr = os.ReadFile(filepath.Join(repoRoot, "testdata", "activitypub", "alice-test-key.pem"))
		keyPEM = string(b)
	})
	if keyErr != nil {
		t.Fatalf("read test key: %v", keyErr)
	}
	key, err := parsePrivateKey(keyPEM)
	if err != nil {
		t.Fatalf("test key: %v", err)
	}
	return keyPEM, &key.PublicKey
}

// config returns a registration config for alice's key serving actors.
func config(t testing.TB, actors, followers []string) push.Config {
	t.Helper()
	pemText, _ := testKey(t)
	raw, err := Config{KeyID: aliceKeyID, PrivateKey: pemText, Actors: actors, Followers: followers}.Encode()
	if err != nil {
		t.Fatalf("encode config: %v", err)
	}
	return raw
}

// newRequest builds the POST of msg to url and signs it at at, as the
// transport does on every attempt.
func newRequest(ctx context.Context, url string, msg push.Message, at time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(msg.Body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", msg.ContentType)
	for k, vs := range msg.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if msg.Signer != nil {
		if err := msg.Signer.Sign(req, msg.Body, at); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// post sends msg to url signed at at and returns the status and body.
func post(ctx context.Context, url string, msg push.Message, at time.Time) (int, string, error) {
	req, err := newRequest(ctx, url, msg, at)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b), nil
}

// testTransport is the smallest push.Transport: 2xx is Accepted, anything
// else Transient.
type testTransport struct{}

func (testTransport) Deliver(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	status, body, err := post(ctx, reg.URL, msg, at)
	switch {
	case ctx.Err() != nil:
		return push.Outcome{}, ctx.Err()
	case err != nil:
		return push.Outcome{Verdict: push.Transient, Reason: err.Error()}, nil
	case status/100 == 2:
		return push.Outcome{Verdict: push.Accepted, Status: status}, nil
	}
	return push.Outcome{Verdict: push.Transient, Status: status, Body: []byte(body), Reason: http.StatusText(status)}, nil
}

// inbox is a receiving server that checks every delivery as a careful
// fediverse server does, answering 202 or 401 with the reason.
type inbox struct {
	srv   *httptest.Server
	pub   *rsa.PublicKey
	clock time.Time // the receiver's "now"

	mu  sync.Mutex
	got []received
}

type received struct {
	header   http.Header
	body     []byte
	activity map[string]any
}

func newInbox(t *testing.T, clock time.Time) *inbox {
	_, pub := testKey(t)
	in := &inbox{pub: pub, clock: clock}
	in.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = in.check(r, body)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var act map[string]any
		_ = json.Unmarshal(body, &act)
		in.mu.Lock()
		in.got = append(in.got, received{header: r.Header.Clone(), body: body, activity: act})
		in.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(in.srv.Close)
	return in
}

func (in *inbox) url(path string) string { return in.srv.URL + path }

func (in *inbox) received() []received {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]received(nil), in.got...)
}

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
	if err := checkDate(r.Header.Get("Date"), in.clock); err != nil {
		return err
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

// checkDate applies Mastodon's window: [now-65 min, now+1 h].
func checkDate(date string, now time.Time) error {
	at, err := http.ParseTime(date)
	if err != nil {
		return fmt.Errorf("Date %q: %w", date, err)
	}
	if at.Before(now.Add(-65*time.Minute)) || at.After(now.Add(time.Hour)) {
		return fmt.Errorf("Date %s is outside [now-65m, now+1h] of the receiver's clock %s", date, now.UTC().Format(http.TimeFormat))
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

// pkcs1 re-encodes a PKCS#8 PEM key as PKCS#1.
func pkcs1(t testing.TB, pemText string) string {
	t.Helper()
	key, err := parsePrivateKey(pemText)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
}
