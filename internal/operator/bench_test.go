package operator

import (
	"bytes"
	"strings"
	"testing"
)

// BenchmarkDecodeJSON decodes a record as POST /v1/records gives it, with
// a 256-byte JSON payload (bench's httpappend record): the checks an API
// body pays before anything is stored.
func BenchmarkDecodeJSON(b *testing.B) {
	payload := `{"type":"order.updated","order":7,"total_cents":1007,"items":[{"sku":"a","qty":1}],"note":"` + strings.Repeat("x", 163) + `"}`
	raw := []byte(`{"id":"w0-7","kind":"order.updated","payload":` + payload + `}`)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		var r RecordInput
		if err := DecodeJSON(bytes.NewReader(raw), &r); err != nil {
			b.Fatal(err)
		}
	}
}
