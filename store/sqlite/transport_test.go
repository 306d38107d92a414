package sqlite_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// postTransport is the smallest real push.Transport: it POSTs with net/http
// and classifies 2xx as accepted, 410 as permanent, anything else (and any
// network error) as transient. The transport package proper lives elsewhere.
type postTransport struct{ client *http.Client }

func (t postTransport) Deliver(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, reg.URL, bytes.NewReader(msg.Body))
	if err != nil {
		return push.Outcome{Verdict: push.Permanent, Reason: "bad request: " + err.Error()}, nil
	}
	req.Header.Set("Content-Type", msg.ContentType)
	req.Header.Set("Message-Id", msg.ID)
	started := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return push.Outcome{}, ctx.Err()
		}
		return push.Outcome{Verdict: push.Transient, Reason: err.Error(), Duration: time.Since(started)}, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, push.MaxEvidenceBody))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	out := push.Outcome{Status: resp.StatusCode, Body: body, Duration: time.Since(started), Reason: resp.Status}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		out.Verdict = push.Accepted
	case resp.StatusCode == http.StatusGone:
		out.Verdict = push.Permanent
	default:
		out.Verdict = push.Transient
	}
	return out, nil
}

// payloadProjection sends each record's payload as one message whose id is
// the record id.
type payloadProjection struct{}

func (payloadProjection) Messages(_ context.Context, rec journal.Record, _ push.Registration) ([]push.Message, error) {
	return []push.Message{{ID: rec.ID, ContentType: rec.ContentType, Body: rec.Payload}}, nil
}

func (payloadProjection) Terminal(rec journal.Record) bool { return rec.Final }

func (payloadProjection) Namespace() string { return "webhook" }

// receiver is a loopback HTTP server that answers each path as told and
// remembers which message ids it acknowledged (answered 2xx), per path. It
// records the id before it writes the answer, so the set holds at least what
// any sender saw acknowledged.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	acked  map[string]map[string]int // path → message id → times acknowledged
	posts  int
	answer func(path string, n int) int // status for the n-th POST (1-based) overall
}

func newReceiver(t testing.TB, answer func(path string, n int) int) *receiver {
	rc := &receiver{acked: map[string]map[string]int{}, answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		rc.mu.Lock()
		rc.posts++
		status := rc.answer(r.URL.Path, rc.posts)
		if status >= 200 && status < 300 {
			if rc.acked[r.URL.Path] == nil {
				rc.acked[r.URL.Path] = map[string]int{}
			}
			rc.acked[r.URL.Path][r.Header.Get("Message-Id")]++
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, http.StatusText(status))
	}))
	t.Cleanup(rc.Close)
	return rc
}

// count returns how many POSTs arrived.
func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.posts
}

// acknowledged reports whether path acknowledged message id.
func (rc *receiver) acknowledged(path, id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.acked[path][id] > 0
}

func (rc *receiver) transport() postTransport { return postTransport{client: rc.Client()} }
