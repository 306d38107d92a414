package a2a_test

import (
	"context"
	"testing"

	"github.com/heraldpush/herald/projection/a2a"
)

// BenchmarkMessages measures one status update (the golden one, about 300
// bytes) as a 1.0 notification (decoded and checked, sent as appended) and
// as a v0.3 Task (decoded, converted, encoded), config parsing included.
func BenchmarkMessages(b *testing.B) {
	for _, c := range []struct{ name, config string }{
		{"v1.0", `{` + goldenConfig + `}`},
		{"v0.3", `{` + goldenConfig + `,"version":"0.3"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			p, r, rec, ctx := a2a.New(), reg(c.config), record(goldenStatus), context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Messages(ctx, rec, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
