package activitypub

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
)

// BenchmarkMessages measures the hot path, Messages, with the config cache
// warm (what a sweep sees), against parsing the config every time, and the
// signing done per attempt for scale.
func BenchmarkMessages(b *testing.B) {
	payload, err := os.ReadFile(filepath.Join(projtest.Root(b), "testdata", "activitypub", "create-note.json"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	reg := registration("https://remote.example/users/bob/inbox", config(b, []string{bob}, []string{aliceFollowers}))
	withBcc := journal.Record{ID: "https://example.com/a/1", Seq: 1, Payload: payload}
	plain := journal.Record{ID: "https://example.com/a/2", Seq: 2, Payload: []byte(`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://example.com/a/2","type":"Like","actor":"` + alice + `","to":"` + bob + `","object":"https://x.example/o"}`)}
	p := New()

	b.Run("cached/plain", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.Messages(ctx, plain, reg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached/bcc-removed", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.Messages(ctx, withBcc, reg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("uncached/plain", func(b *testing.B) {
		for b.Loop() {
			s, err := parseSettings(reg.Config)
			if err != nil {
				b.Fatal(err)
			}
			a, err := parseActivity(plain.Payload)
			if err != nil || !s.wants(a) {
				b.Fatal(err)
			}
		}
	})
	b.Run("sign", func(b *testing.B) {
		msgs, err := p.Messages(ctx, withBcc, reg)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, reg.URL, nil)
			if err := msgs[0].Signer.Sign(req, msgs[0].Body, at); err != nil {
				b.Fatal(err)
			}
		}
	})
}
