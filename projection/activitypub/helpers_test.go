package activitypub

import (
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

	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
)

const (
	alice          = "https://example.com/users/alice"
	aliceKeyID     = alice + "#main-key"
	aliceFollowers = alice + "/followers"
	bob            = "https://remote.example/users/bob"
	carol          = "https://other.example/users/carol"
)

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
		b, keyErr = os.ReadFile(filepath.Join(projtest.Root(t), "testdata", "activitypub", "alice-test-key.pem"))
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
