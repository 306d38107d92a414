package webhook

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
)

// TestGolden pins the exact request of one delivery at a fixed instant,
// signed with two secrets.
func TestGolden(t *testing.T) {
	payload, err := os.ReadFile(filepath.Join(projtest.Root(t), "testdata", "webhook", "order-paid.json"))
	if err != nil {
		t.Fatal(err)
	}
	rec := journal.Record{Stream: "tenant/42", Seq: 1, ID: "msg_2026_order_7Hq2_paid", Kind: "order.paid", ContentType: "application/json", Payload: payload}
	reg := registration("https://hooks.example/herald", config(t, secretA, secretB))
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	msgs, err := New().Messages(context.Background(), rec, reg)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Messages: %v, %d messages", err, len(msgs))
	}
	projtest.Golden(t, "webhook/order-paid.golden", projtest.Render(t, reg.URL, msgs[0], at))
}
