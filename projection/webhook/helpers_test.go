package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldpush/herald/push"
)

// Secrets made for these tests only.
const (
	secretA = "whsec_tS7gVmFt0+1ToUyWqXAMq8TLQH+Fm4WyuxAzBQ+HZA8="
	secretB = "whsec_HyDsgbhT+/cQVlPSNwmKZN3ToOkElc+f"
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

// do sends req and returns the status and body of the answer.
func do(req *http.Request) (int, string, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b), nil
}

// post sends msg to url signed at at.
func post(ctx context.Context, url string, msg push.Message, at time.Time) (int, string, error) {
	req, err := newRequest(ctx, url, msg, at)
	if err != nil {
		return 0, "", err
	}
	return do(req)
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

var errUnexpected = errors.New("unexpected answer")

// expect checks an answer's status.
func expect(status int, body string, err error, want int) error {
	if err != nil {
		return err
	}
	if status != want {
		return fmt.Errorf("%w: %d %s, want %d", errUnexpected, status, body, want)
	}
	return nil
}
