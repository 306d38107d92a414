package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

func githubPayloads(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(projtest.Corpus(t, "github"), "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no GitHub payloads in the corpus (%v)", err)
	}
	return files
}

// recordID names a corpus file as a record id: "gh-<event>-<file>".
func recordID(file string) string {
	return "gh-" + filepath.Base(filepath.Dir(file)) + "-" + strings.TrimSuffix(filepath.Base(file), ".json")
}

// TestGitHubCorpusVerifiesWithEachSecret delivers every GitHub payload of
// the corpus signed with two secrets (a rotation); the receiver verifies
// each with the Standard Webhooks library, once per secret on its own, and
// gets the payload byte for byte.
func TestGitHubCorpusVerifiesWithEachSecret(t *testing.T) {
	now := time.Now() // the library checks timestamps against the wall clock
	ctx := context.Background()
	rc := newReceiver(t, secretA, secretB)
	reg := registration(rc.srv.URL+"/hooks/github", config(t, secretA, secretB))
	p := New()
	files := githubPayloads(t)
	for _, f := range files {
		payload, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rec := journal.Record{Stream: reg.Stream, Seq: 1, ID: recordID(f), Kind: "com.github." + filepath.Base(filepath.Dir(f)), ContentType: "application/json", Payload: payload}
		msgs, err := p.Messages(ctx, rec, reg)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("%s: Messages: %v, %d messages", rec.ID, err, len(msgs))
		}
		if msgs[0].ID != rec.ID {
			t.Fatalf("%s: message id %q, want the record id", rec.ID, msgs[0].ID)
		}
		if out := projtest.Deliver(t, reg.URL, msgs[0], now); !out.OK() || out.Status != http.StatusNoContent {
			t.Fatalf("%s: %s", rec.ID, projtest.Failure(out))
		}
		got := rc.received()
		last := got[len(got)-1]
		if !bytes.Equal(last.body, payload) {
			t.Fatalf("%s: body differs from the payload", rec.ID)
		}
		if last.header.Get("Content-Type") != "application/json" || last.header.Get("webhook-id") != rec.ID {
			t.Fatalf("%s: Content-Type %q, webhook-id %q", rec.ID, last.header.Get("Content-Type"), last.header.Get("webhook-id"))
		}
		if n := len(strings.Fields(last.header.Get("webhook-signature"))); n != 2 {
			t.Fatalf("%s: %d signatures, want 2 (one per secret)", rec.ID, n)
		}
	}
	if n := len(rc.received()); n != len(files) {
		t.Fatalf("receiver accepted %d of %d payloads", n, len(files))
	}
}

// TestSignatureIsTheSpecHMAC recomputes the signatures by hand from the
// specification (HMAC-SHA256 over id.timestamp.body, keyed with the
// base64-decoded secret), independently of the library that made them.
func TestSignatureIsTheSpecHMAC(t *testing.T) {
	at := time.Unix(1767323045, 0)
	rec := journal.Record{ID: "evt_1", Payload: []byte(`{"n":1}`), ContentType: "application/json"}
	msgs, err := New().Messages(context.Background(), rec, registration("https://hooks.example/x", config(t, secretA, secretB)))
	if err != nil {
		t.Fatal(err)
	}
	req, err := projtest.NewRequest(t, "https://hooks.example/x", msgs[0], at)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range []string{secretA, secretB} {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil {
			t.Fatal(err)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte("evt_1.1767323045.{\"n\":1}"))
		want = append(want, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	if got := req.Header.Get("webhook-signature"); got != strings.Join(want, " ") {
		t.Fatalf("webhook-signature %q\nwant %q", got, strings.Join(want, " "))
	}
	if got := req.Header.Get("webhook-timestamp"); got != "1767323045" {
		t.Fatalf("webhook-timestamp %q", got)
	}
}

// TestTamperedBodyFailsVerification: a body changed after signing is refused.
func TestTamperedBodyFailsVerification(t *testing.T) {
	now := time.Now()
	rc := newReceiver(t, secretA)
	reg := registration(rc.srv.URL, config(t, secretA))
	rec := journal.Record{ID: "evt_tamper", Payload: []byte(`{"amount":"10.00"}`), ContentType: "application/json"}
	msgs, err := New().Messages(context.Background(), rec, reg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := projtest.NewRequest(t, reg.URL, msgs[0], now)
	if err != nil {
		t.Fatal(err)
	}
	tampered := []byte(`{"amount":"99.00"}`)
	req.Body, req.ContentLength = nopCloser{bytes.NewReader(tampered)}, int64(len(tampered))
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
	if out := projtest.Deliver(t, reg.URL, msgs[0], now); !out.OK() || out.Status != http.StatusNoContent {
		t.Fatal(projtest.Failure(out))
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// TestStaleTimestampFailsVerification: a message signed ten minutes ago is
// refused as a possible replay; signed at the retry's instant, it passes.
func TestStaleTimestampFailsVerification(t *testing.T) {
	now := time.Now()
	rc := newReceiver(t, secretA)
	reg := registration(rc.srv.URL, config(t, secretA))
	msgs, err := New().Messages(context.Background(), journal.Record{ID: "evt_stale", Payload: []byte(`{}`)}, reg)
	if err != nil {
		t.Fatal(err)
	}
	if out := projtest.Deliver(t, reg.URL, msgs[0], now.Add(-10*time.Minute)); out.Status != http.StatusUnauthorized || !strings.Contains(string(out.Body), "too old") {
		t.Fatalf("stale timestamp: %s; want 401 for the timestamp", projtest.Failure(out))
	}
	if out := projtest.Deliver(t, reg.URL, msgs[0], now); !out.OK() || out.Status != http.StatusNoContent {
		t.Fatalf("re-signed at now: %s", projtest.Failure(out))
	}
	if got := rc.received()[0].header.Get("webhook-timestamp"); got != strconv.FormatInt(now.Unix(), 10) {
		t.Fatalf("webhook-timestamp %s, want the attempt's %d", got, now.Unix())
	}
}

// TestMessageIsStableAndDefaultsContentType: the same inputs give the same
// message (id, headers, body); an empty content type is the journal's default.
func TestMessageIsStableAndDefaultsContentType(t *testing.T) {
	p := New()
	reg := registration("https://hooks.example/x", config(t, secretA))
	rec := journal.Record{ID: "evt_2", Payload: []byte("plain text"), ContentType: "text/plain; charset=utf-8"}
	a, err1 := p.Messages(context.Background(), rec, reg)
	b, err2 := p.Messages(context.Background(), rec, reg)
	if err1 != nil || err2 != nil || len(a) != 1 {
		t.Fatal(err1, err2)
	}
	if a[0].ID != "evt_2" || a[0].ContentType != rec.ContentType || !reflect.DeepEqual(a[0].Header, b[0].Header) || !bytes.Equal(a[0].Body, b[0].Body) {
		t.Fatalf("messages differ or are wrong: %v / %v", a[0], b[0])
	}
	rec.ContentType = ""
	c, err := p.Messages(context.Background(), rec, reg)
	if err != nil || c[0].ContentType != journal.DefaultContentType {
		t.Fatalf("content type %q, %v; want %q", c[0].ContentType, err, journal.DefaultContentType)
	}
	if _, err := p.Messages(context.Background(), rec, registration(reg.URL, push.Config(`{"secrets":["nope"]}`))); !errors.Is(err, journal.ErrInvalid) {
		t.Fatalf("bad config: %v, want ErrInvalid", err)
	}
	if err := a[0].Signer.Sign(&http.Request{Header: http.Header{}}, rec.Payload, time.Time{}); err == nil {
		t.Fatal("signing at the zero time succeeded")
	}
}

// TestWorkerDeliversInOrderAndCompletes runs a real push.Worker over a
// memory store: payloads arrive in order, the cursor advances past them,
// and the final record completes the registration.
func TestWorkerDeliversInOrderAndCompletes(t *testing.T) {
	ctx := context.Background()
	now := time.Now() // receivers check webhook-timestamp against the wall clock
	store := memory.New()
	rc := newReceiver(t, secretA)
	var entries []journal.Entry
	for _, event := range []string{"push", "issues", "release"} {
		files, err := filepath.Glob(filepath.Join(projtest.Corpus(t, "github"), event, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s payloads in the corpus", event)
		}
		payload, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, journal.Entry{ID: recordID(files[0]), Kind: "com.github." + event, Payload: payload})
	}
	if _, err := store.Append(ctx, "tenant/42", entries...); err != nil {
		t.Fatal(err)
	}
	w, err := push.NewWorker(store, store, projtest.Transport(t), New())
	if err != nil {
		t.Fatal(err)
	}
	reg := registration(rc.srv.URL+"/hooks", config(t, secretA))
	if _, err := w.Register(ctx, reg); err != nil {
		t.Fatal(err)
	}
	rep, err := w.RunOnce(ctx, now, 10)
	if err != nil || rep.Deliveries != 3 || rep.Retries != 0 {
		t.Fatalf("sweep: %+v, %v; want 3 deliveries", rep, err)
	}
	var ids []string
	for _, d := range rc.received() {
		ids = append(ids, d.header.Get("webhook-id"))
	}
	if want := []string{entries[0].ID, entries[1].ID, entries[2].ID}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("received %v, want %v in order", ids, want)
	}
	st, err := store.Get(ctx, reg.Stream, reg.ID)
	if err != nil || st.NextSeq != 4 {
		t.Fatalf("cursor %d, %v; want 4", st.NextSeq, err)
	}

	// A final record: delivered, then the registration is complete.
	if _, err := store.Append(ctx, "tenant/42", journal.Entry{ID: "evt_closed", Kind: "tenant.closed", Payload: []byte(`{"closed":true}`), Final: true}); err != nil {
		t.Fatal(err)
	}
	rep, err = w.RunOnce(ctx, now.Add(time.Second), 10)
	if err != nil || rep.Deliveries != 1 || rep.Completed != 1 {
		t.Fatalf("second sweep: %+v, %v; want the final record delivered and the registration completed", rep, err)
	}
	if got := rc.received(); len(got) != 4 || got[3].header.Get("webhook-id") != "evt_closed" {
		t.Fatalf("final record not received last: %d deliveries", len(got))
	}
	if _, err := store.Get(ctx, reg.Stream, reg.ID); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("registration after its final record: %v, want ErrNotFound", err)
	}
}
