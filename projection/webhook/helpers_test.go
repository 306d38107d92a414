package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldpush/herald/push"
)

// Secrets made for these tests only.
const (
	secretA = "whsec_tS7gVmFt0+1ToUyWqXAMq8TLQH+Fm4WyuxAzBQ+HZA8="
	secretB = "whsec_HyDsgbhT+/cQVlPSNwmKZN3ToOkElc+f"
)

func config(t testing.TB, secrets ...string) push.Config {
	t.Helper()
	raw, err := Config{Secrets: secrets}.Encode()
	if err != nil {
		t.Fatalf("encode config: %v", err)
	}
	return raw
}

func registration(url string, cfg push.Config) push.Registration {
	return push.Registration{Stream: "tenant/42", ID: "endpoint-1", Namespace: Namespace, URL: url, Config: cfg, NextSeq: 1}
}

// receiver verifies every webhook with the Standard Webhooks library, once
// per secret it knows, each on its own (as a consumer holding only that
// secret would), and answers 204 or 401 with the reason.
type receiver struct {
	srv *httptest.Server

	mu  sync.Mutex
	got []delivery
}

type delivery struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, secrets ...string) *receiver {
	var verifiers []*standardwebhooks.Webhook
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		verifiers = append(verifiers, wh)
	}
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		for i, wh := range verifiers {
			if err != nil {
				break
			}
			if verr := wh.Verify(body, r.Header); verr != nil {
				err = fmt.Errorf("secret %d: %w", i, verr)
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		rc.mu.Lock()
		rc.got = append(rc.got, delivery{header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) received() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// specSignature is the specification's v1 signature of content, computed
// here by hand: base64(HMAC-SHA256(base64-decoded secret, content)).
func specSignature(t testing.TB, secret, content string) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(content))
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
