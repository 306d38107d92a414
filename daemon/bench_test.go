package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

// BenchmarkPostRecords is what the HTTP API adds to an append, without the
// network or a database: POST /v1/records of one record with a 256-byte
// JSON payload (bench's httpappend body) through the API handler onto the
// memory store.
func BenchmarkPostRecords(b *testing.B) {
	d, err := New(Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{webhook.New()},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	h := d.APIHandler()
	payload := `{"order":"o-000000","status":"paid","total_cents":12345,"currency":"EUR","items":[{"sku":"sku-1","qty":1},{"sku":"sku-2","qty":2}],"note":"` +
		strings.Repeat("x", 115) + `"}`
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		body := fmt.Sprintf(`{"stream":"order/%d","records":[{"id":"w0-%d","kind":"order.updated","payload":%s}]}`, i%1000, i, payload)
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/v1/records", strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:1234"
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusCreated {
			b.Fatalf("%d: %s", w.Code, w.Body)
		}
		_, _ = io.Copy(io.Discard, w.Body)
	}
}
