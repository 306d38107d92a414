package journal_test

import (
	"testing"

	"github.com/heraldpush/herald/journal"
)

// BenchmarkValidateEntries checks the usual append, one entry with a JSON
// payload and the default content type, as every store's Append and
// AppendTx do first: the Go side of the producer's transaction.
func BenchmarkValidateEntries(b *testing.B) {
	entries := []journal.Entry{{ID: "order-1234-updated", Kind: "order.updated",
		Payload: []byte(`{"type":"Create","object":{"content":"a short note of about a hundred bytes, as fediverse posts go"}}`)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := journal.ValidateEntries("orders/1234", entries, 0); err != nil {
			b.Fatal(err)
		}
	}
}
