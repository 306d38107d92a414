package activitypub

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// TestGolden pins the exact request of one delivery at a fixed instant:
// headers (Date, Digest, the rsa-sha256 Signature, which PKCS#1 v1.5 makes
// deterministic) and body (bto/bcc removed from the activity and its Note).
func TestGolden(t *testing.T) {
	payload, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "activitypub", "create-note.json"))
	if err != nil {
		t.Fatal(err)
	}
	rec := journal.Record{Stream: "actor/alice", Seq: 1, ID: "https://example.com/users/alice/statuses/1/activity",
		Kind: "Create", ContentType: ContentType, Payload: payload}
	reg := registration("https://remote.example/users/bob/inbox", config(t, []string{bob}, []string{aliceFollowers}))
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	msgs, err := New().Messages(context.Background(), rec, reg)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Messages: %v, %d messages", err, len(msgs))
	}
	req, err := newRequest(context.Background(), reg.URL, msgs[0], at)
	if err != nil {
		t.Fatal(err)
	}
	_, pub := testKey(t)
	if err := verifySignature(req, pub); err != nil {
		t.Fatalf("golden request does not verify: %v", err)
	}
	var b strings.Builder
	b.WriteString("message id: " + msgs[0].ID + "\n")
	b.WriteString(req.Method + " " + req.URL.String() + "\n")
	keys := make([]string, 0, len(req.Header))
	for k := range req.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	b.WriteString("\n")
	b.Write(msgs[0].Body)
	got := b.String()

	path := filepath.Join(repoRoot, "testdata", "golden", "activitypub", "create-note.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("request differs from %s (run with -update if the change is intended)\n got:\n%s\nwant:\n%s", path, got, want)
	}
}
