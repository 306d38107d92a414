package webhook

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
)

// BenchmarkMessages measures Messages with the config cache warm (what a
// sweep sees) against parsing the config every time, and the per-attempt
// signing of a typical GitHub payload with two secrets, for scale.
func BenchmarkMessages(b *testing.B) {
	payload, err := os.ReadFile(filepath.Join(projtest.Corpus(b, "github"), "push", "payload.json"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	reg := registration("https://hooks.example/x", config(b, secretA, secretB))
	rec := journal.Record{ID: "evt_bench", Payload: payload, ContentType: "application/json"}
	p := New()
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.Messages(ctx, rec, reg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("uncached", func(b *testing.B) {
		for b.Loop() {
			if _, err := parse(reg.Config); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sign", func(b *testing.B) {
		msgs, err := p.Messages(ctx, rec, reg)
		if err != nil {
			b.Fatal(err)
		}
		at := time.Unix(1767323045, 0)
		for b.Loop() {
			req := &http.Request{Header: http.Header{}}
			if err := msgs[0].Signer.Sign(req, msgs[0].Body, at); err != nil {
				b.Fatal(err)
			}
		}
	})
}
