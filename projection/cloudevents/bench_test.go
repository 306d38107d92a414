package cloudevents_test

import (
	"context"
	"testing"

	"github.com/heraldpush/herald/projection/cloudevents"
)

// BenchmarkMessages measures one record (the golden push event, about
// 100 bytes of JSON) projected in each content mode, config parsing included.
func BenchmarkMessages(b *testing.B) {
	for _, mode := range []struct{ name, config string }{
		{"binary", `{"source":"https://github.com/octo-org/hello-world","token":"bench-token"}`},
		{"structured", `{"source":"https://github.com/octo-org/hello-world","structured":true,"token":"bench-token"}`},
	} {
		b.Run(mode.name, func(b *testing.B) {
			p, reg, ctx := cloudevents.New(), registration(mode.config), context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Messages(ctx, goldenRecord, reg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
