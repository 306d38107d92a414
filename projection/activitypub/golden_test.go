package activitypub

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
)

// TestGolden pins the exact request of one delivery at a fixed instant:
// headers (Date, Digest, the rsa-sha256 Signature, which PKCS#1 v1.5 makes
// deterministic) and body (bto/bcc removed from the activity and its Note).
func TestGolden(t *testing.T) {
	payload, err := os.ReadFile(filepath.Join(projtest.Root(t), "testdata", "activitypub", "create-note.json"))
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
	req, err := projtest.NewRequest(t, reg.URL, msgs[0], at)
	if err != nil {
		t.Fatal(err)
	}
	_, pub := testKey(t)
	if err := verifySignature(req, pub); err != nil {
		t.Fatalf("golden request does not verify: %v", err)
	}
	projtest.Golden(t, "activitypub/create-note.golden", projtest.Render(t, reg.URL, msgs[0], at))
}
