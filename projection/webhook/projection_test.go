package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldpush/herald/internal/corpustest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

func registration(url string, cfg push.Config) push.Registration {
	return push.Registration{Stream: "tenant/42", ID: "endpoint-1", Namespace: Namespace, URL: url, Config: cfg, NextSeq: 1}
}

// receiver verifies every webhook with the Standard Webhooks library, once
// per secret it knows, each on its own (as a consumer holding only that
// secret would), and answers 204 or 401 with the reason.
type receiver = projtest.Receiver[delivery]

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
	return projtest.NewReceiver(t, http.StatusNoContent, func(r *http.Request, body []byte) (delivery, error) {
		for i, wh := range verifiers {
			if err := wh.Verify(body, r.Header); err != nil {
				return delivery{}, fmt.Errorf("secret %d: %w", i, err)
			}
		}
		return delivery{header: r.Header.Clone(), body: body}, nil
	})
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

// githubRecord is the record of a corpus payload: id "gh-<event>-<file>",
// kind "com.github.<event>".
func githubRecord(t testing.TB, file string) journal.Record {
	t.Helper()
	payload, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	event := filepath.Base(filepath.Dir(file))
	return journal.Record{Stream: "tenant/42", Seq: 1, ID: "gh-" + event + "-" + strings.TrimSuffix(filepath.Base(file), ".json"),
		Kind: "com.github." + event, ContentType: "application/json", Payload: payload}
}

// TestGitHubCorpusVerifiesWithEachSecret delivers every GitHub payload of
// the corpus signed with two secrets (a rotation); the receiver verifies
// each with the Standard Webhooks library, once per secret on its own, and
// gets the payload byte for byte.
func TestGitHubCorpusVerifiesWithEachSecret(t *testing.T) {
	now := time.Now() // the library checks timestamps against the wall clock
	rc := newReceiver(t, secretA, secretB)
	reg := registration(rc.URL+"/hooks/github", config(t, false, secretA, secretB))
	p := New()
	files, err := filepath.Glob(filepath.Join(corpustest.Dir(t, "github"), "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no GitHub payloads in the corpus (%v)", err)
	}
	for _, f := range files {
		rec := githubRecord(t, f)
		msg := projtest.One(t, p, rec, reg)
		if msg.ID != rec.ID {
			t.Fatalf("%s: message id %q, want the record id", rec.ID, msg.ID)
		}
		if out := projtest.Deliver(t, reg.URL, msg, now); !out.OK() || out.Status != http.StatusNoContent {
			t.Fatalf("%s: %s", rec.ID, projtest.Failure(out))
		}
		got := rc.Received()
		last := got[len(got)-1]
		if !bytes.Equal(last.body, rec.Payload) {
			t.Fatalf("%s: body differs from the payload", rec.ID)
		}
		if last.header.Get("Content-Type") != "application/json" || last.header.Get("webhook-id") != rec.ID {
			t.Fatalf("%s: Content-Type %q, webhook-id %q", rec.ID, last.header.Get("Content-Type"), last.header.Get("webhook-id"))
		}
		if n := len(strings.Fields(last.header.Get("webhook-signature"))); n != 2 {
			t.Fatalf("%s: %d signatures, want 2 (one per secret)", rec.ID, n)
		}
	}
	if n := len(rc.Received()); n != len(files) {
		t.Fatalf("receiver accepted %d of %d payloads", n, len(files))
	}
}

// TestSignatureIsTheSpecHMAC recomputes the signatures by hand from the
// specification (HMAC-SHA256 over id.timestamp.body, keyed with the
// base64-decoded secret), independently of the library that made them.
func TestSignatureIsTheSpecHMAC(t *testing.T) {
	at := time.Unix(1767323045, 0)
	rec := journal.Record{ID: "evt_1", Payload: []byte(`{"n":1}`), ContentType: "application/json"}
	msg := projtest.One(t, New(), rec, registration("https://hooks.example/x", config(t, false, secretA, secretB)))
	req, err := projtest.NewRequest(t, "https://hooks.example/x", msg, at)
	if err != nil {
		t.Fatal(err)
	}
	want := specSignature(t, secretA, "evt_1.1767323045.{\"n\":1}") + " " + specSignature(t, secretB, "evt_1.1767323045.{\"n\":1}")
	if got := req.Header.Get("webhook-signature"); got != want {
		t.Fatalf("webhook-signature %q\nwant %q", got, want)
	}
	if got := req.Header.Get("webhook-timestamp"); got != "1767323045" {
		t.Fatalf("webhook-timestamp %q", got)
	}
}

// TestTamperedBodyFailsVerification: a body changed after signing is refused.
func TestTamperedBodyFailsVerification(t *testing.T) {
	now := time.Now()
	rc := newReceiver(t, secretA)
	reg := registration(rc.URL, config(t, false, secretA))
	msg := projtest.One(t, New(), journal.Record{ID: "evt_tamper", Payload: []byte(`{"amount":"10.00"}`), ContentType: "application/json"}, reg)
	req, err := projtest.NewRequest(t, reg.URL, msg, now)
	if err != nil {
		t.Fatal(err)
	}
	tampered := []byte(`{"amount":"99.00"}`)
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(tampered)), int64(len(tampered))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "no matching signature") {
		t.Fatalf("tampered body: %s (%s), want 401 for the signature", resp.Status, body)
	}
	// The same message untouched is accepted: the refusal was the tampering.
	if out := projtest.Deliver(t, reg.URL, msg, now); !out.OK() || out.Status != http.StatusNoContent {
		t.Fatal(projtest.Failure(out))
	}
}

// TestStaleTimestampFailsVerification: a message signed ten minutes ago is
// refused as a possible replay; signed at the retry's instant, it passes.
func TestStaleTimestampFailsVerification(t *testing.T) {
	now := time.Now()
	rc := newReceiver(t, secretA)
	reg := registration(rc.URL, config(t, false, secretA))
	msg := projtest.One(t, New(), journal.Record{ID: "evt_stale", Payload: []byte(`{}`)}, reg)
	if out := projtest.Deliver(t, reg.URL, msg, now.Add(-10*time.Minute)); out.Status != http.StatusUnauthorized || !strings.Contains(string(out.Body), "too old") {
		t.Fatalf("stale timestamp: %s; want 401 for the timestamp", projtest.Failure(out))
	}
	if out := projtest.Deliver(t, reg.URL, msg, now); !out.OK() || out.Status != http.StatusNoContent {
		t.Fatalf("re-signed at now: %s", projtest.Failure(out))
	}
	if got := rc.Received()[0].header.Get("webhook-timestamp"); got != strconv.FormatInt(now.Unix(), 10) {
		t.Fatalf("webhook-timestamp %s, want the attempt's %d", got, now.Unix())
	}
}

// TestMessageIsStableAndDefaultsContentType: the same inputs give the same
// message (id, headers, body); an empty content type is the journal's default.
func TestMessageIsStableAndDefaultsContentType(t *testing.T) {
	p := New()
	reg := registration("https://hooks.example/x", config(t, false, secretA))
	rec := journal.Record{ID: "evt_2", Payload: []byte("plain text"), ContentType: "text/plain; charset=utf-8"}
	a, b := projtest.One(t, p, rec, reg), projtest.One(t, p, rec, reg)
	if a.ID != "evt_2" || a.ContentType != rec.ContentType || !reflect.DeepEqual(a.Header, b.Header) || !bytes.Equal(a.Body, b.Body) {
		t.Fatalf("messages differ or are wrong: %v / %v", a, b)
	}
	rec.ContentType = ""
	if c := projtest.One(t, p, rec, reg); c.ContentType != journal.DefaultContentType {
		t.Fatalf("content type %q; want %q", c.ContentType, journal.DefaultContentType)
	}
	if _, err := p.Messages(context.Background(), rec, registration(reg.URL, push.Config(`{"secrets":["nope"]}`))); !errors.Is(err, journal.ErrInvalid) {
		t.Fatalf("bad config: %v, want ErrInvalid", err)
	}
	if err := a.Signer.Sign(&http.Request{Header: http.Header{}}, rec.Payload, time.Time{}); err == nil {
		t.Fatal("signing at the zero time succeeded")
	}
}

// TestGolden pins the exact request of one delivery at a fixed instant,
// signed with two secrets.
func TestGolden(t *testing.T) {
	rec := journal.Record{Stream: "tenant/42", Seq: 1, ID: "msg_2026_order_7Hq2_paid", Kind: "order.paid", ContentType: "application/json",
		Payload: projtest.Testdata(t, "webhook/order-paid.json")}
	reg := registration("https://hooks.example/herald", config(t, false, secretA, secretB))
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	projtest.Golden(t, "webhook/order-paid.golden", projtest.Render(t, reg.URL, projtest.One(t, New(), rec, reg), at))
}

// TestWorkerDeliversInOrderAndCompletes runs a real push.Worker over a
// memory store: payloads arrive in order, the cursor advances past them,
// and the final record completes the registration.
func TestWorkerDeliversInOrderAndCompletes(t *testing.T) {
	ctx := context.Background()
	now := time.Now() // receivers check webhook-timestamp against the wall clock
	db := memory.New()
	rc := newReceiver(t, secretA)
	var entries []journal.Entry
	for _, event := range []string{"push", "issues", "release"} {
		files, err := filepath.Glob(filepath.Join(corpustest.Dir(t, "github"), event, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s payloads in the corpus", event)
		}
		rec := githubRecord(t, files[0])
		entries = append(entries, journal.Entry{ID: rec.ID, Kind: rec.Kind, Payload: rec.Payload})
	}
	if _, err := db.Append(ctx, "tenant/42", entries...); err != nil {
		t.Fatal(err)
	}
	reg := registration(rc.URL+"/hooks", config(t, false, secretA))
	w := projtest.Worker(t, db, New(), reg)
	rep, err := w.RunOnce(ctx, now, 10)
	if err != nil || rep.Deliveries != 3 || rep.Retries != 0 {
		t.Fatalf("sweep: %+v, %v; want 3 deliveries", rep, err)
	}
	var ids []string
	for _, d := range rc.Received() {
		ids = append(ids, d.header.Get("webhook-id"))
	}
	if want := []string{entries[0].ID, entries[1].ID, entries[2].ID}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("received %v, want %v in order", ids, want)
	}
	st, err := db.Get(ctx, reg.Stream, reg.ID)
	if err != nil || st.NextSeq != 4 {
		t.Fatalf("cursor %d, %v; want 4", st.NextSeq, err)
	}

	// A final record: delivered, then the registration is complete.
	if _, err := db.Append(ctx, "tenant/42", journal.Entry{ID: "evt_closed", Kind: "tenant.closed", Payload: []byte(`{"closed":true}`), Final: true}); err != nil {
		t.Fatal(err)
	}
	rep, err = w.RunOnce(ctx, now.Add(time.Second), 10)
	if err != nil || rep.Deliveries != 1 || rep.Completed != 1 {
		t.Fatalf("second sweep: %+v, %v; want the final record delivered and the registration completed", rep, err)
	}
	if got := rc.Received(); len(got) != 4 || got[3].header.Get("webhook-id") != "evt_closed" {
		t.Fatalf("final record not received last: %d deliveries", len(got))
	}
	if _, err := db.Get(ctx, reg.Stream, reg.ID); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("registration after its final record: %v, want ErrNotFound", err)
	}
}

// BenchmarkMessages measures Messages with the config cache warm (what a
// sweep sees) against parsing the config every time, and the per-attempt
// signing of a typical GitHub payload with two secrets, for scale.
func BenchmarkMessages(b *testing.B) {
	payload, err := os.ReadFile(filepath.Join(corpustest.Dir(b, "github"), "push", "payload.json"))
	if err != nil {
		b.Fatal(err)
	}
	reg := registration("https://hooks.example/x", config(b, false, secretA, secretB))
	rec := journal.Record{ID: "evt_bench", Payload: payload, ContentType: "application/json"}
	p := New()
	projtest.BenchMessages(b, "cached", p, rec, reg)
	b.Run("uncached", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseConfig(reg.Config); err != nil { // decoded and keyed, as on a miss
				b.Fatal(err)
			}
		}
	})
	b.Run("sign", func(b *testing.B) {
		msg := projtest.One(b, p, rec, reg)
		at := time.Unix(1767323045, 0)
		for b.Loop() {
			if err := msg.Signer.Sign(&http.Request{Header: http.Header{}}, msg.Body, at); err != nil {
				b.Fatal(err)
			}
		}
	})
}
