package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/storetest"
)

// The benchmarks behind BENCHMARKS.md, "SQLite store". Run:
//
//	go test -run '^$' -bench . -benchtime 3s ./store/sqlite

// withSync sets PRAGMA synchronous, to measure what FULL costs against
// NORMAL. Open always uses FULL (doc.go, "Durability").
func withSync(level string) Option { return func(c *config) { c.sync = level } }

func benchStore(b *testing.B, opts ...Option) *Store {
	b.Helper()
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "herald.db"), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchPayload is a 200-byte JSON object, about an ActivityPub Create's
// envelope without its content.
var benchPayload = []byte(fmt.Sprintf(`{"type":"Create","actor":"https://example.com/users/alice","object":{"content":%q}}`,
	bytes.Repeat([]byte("x"), 110)))

func benchEntries(prefix string, n int) []journal.Entry {
	out := make([]journal.Entry, n)
	for i := range out {
		out[i] = journal.Entry{ID: fmt.Sprintf("%s-%d", prefix, i), Kind: "Create", ContentType: "application/activity+json", Payload: benchPayload}
	}
	return out
}

// BenchmarkAppend: one Append call per iteration, of 1, 100 or 1,000
// records, under synchronous=FULL (the default) and NORMAL.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []string{syncFull, "NORMAL"} {
		for _, batch := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("sync=%s/batch=%d", sync, batch), func(b *testing.B) {
				s := benchStore(b, withSync(sync))
				ctx := context.Background()
				b.ResetTimer()
				for i := range b.N {
					if _, err := s.Append(ctx, "actor/alice", benchEntries(fmt.Sprintf("r%d", i), batch)...); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			})
		}
	}
}

// BenchmarkAppendParallel: single-record appends from many goroutines, to
// one hot stream or to a stream each. The single writer serialises them:
// goroutines add no throughput, only queueing.
func BenchmarkAppendParallel(b *testing.B) {
	for _, hot := range []bool{true, false} {
		name := map[bool]string{true: "one-stream", false: "stream-each"}[hot]
		b.Run(name, func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			var g atomic.Int64
			b.SetParallelism(4) // 8 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				me := g.Add(1)
				stream := "hot"
				if !hot {
					stream = fmt.Sprintf("stream/%d", me)
				}
				for i := 0; pb.Next(); i++ {
					if _, err := s.Append(ctx, stream, benchEntries(fmt.Sprintf("g%d-%d", me, i), 1)...); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkDeliver: deliveries per second through a real worker (default
// options: 16 registrations in flight, a page of 256 records, one cursor
// write per page) to a loopback receiver that answers 204. fanout is the
// number of registrations following the one stream; each iteration is one
// delivery.
func BenchmarkDeliver(b *testing.B) {
	for _, fanout := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("fanout=%d", fanout), func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(http.StatusNoContent)
			}))
			defer srv.Close()
			client := srv.Client()
			client.Transport.(*http.Transport).MaxIdleConnsPerHost = 32
			s := benchStore(b)
			ctx := context.Background()
			for i := range fanout {
				if _, err := s.Register(ctx, store.Registration{Stream: "actor/alice", ID: fmt.Sprintf("inbox-%d", i),
					Namespace: "webhook", URL: fmt.Sprintf("%s/inbox/%d", srv.URL, i)}); err != nil {
					b.Fatal(err)
				}
			}
			records := (b.N + fanout - 1) / fanout
			for done := 0; done < records; done += 1000 {
				if _, err := s.Append(ctx, "actor/alice", benchEntries(fmt.Sprintf("r%d", done), min(1000, records-done))...); err != nil {
					b.Fatal(err)
				}
			}
			w, err := push.NewWorker(s, s, storetest.HTTPTransport{Client: client}, storetest.PayloadProjection{},
				push.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			delivered := 0
			at := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
			for i := 0; delivered < records*fanout; i++ {
				rep, err := w.RunOnce(ctx, at.Add(time.Duration(i)*time.Second), 256)
				if err != nil {
					b.Fatal(err)
				}
				if rep.Registrations == 0 {
					b.Fatalf("nothing due with %d of %d delivered", delivered, records*fanout)
				}
				delivered += rep.Deliveries
			}
			b.StopTimer()
			b.ReportMetric(float64(delivered)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}

// BenchmarkAudience: one record to n registrations of one stream on n/10
// hosts, claimed as the daemon claims (32 at a time, at most 4 a host) and
// each advanced past it: the store's cost of one delivery, which must not
// grow with the registrations that are not served.
func BenchmarkAudience(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("registrations=%d", n), func(b *testing.B) {
			ctx := context.Background()
			for range b.N {
				b.StopTimer()
				s := benchStore(b)
				for i := range n {
					if _, err := s.Register(ctx, store.Registration{Stream: "actor/alice", ID: fmt.Sprintf("inbox-%d", i),
						Namespace: "activitypub", URL: fmt.Sprintf("https://h%d.example/inbox/%d", i/10, i)}); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := s.Append(ctx, "actor/alice", benchEntries("post", 1)...); err != nil {
					b.Fatal(err)
				}
				at := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
				b.StartTimer()
				done, claims := 0, 0
				for done < n {
					batch, err := s.Due(ctx, store.DueQuery{At: at, Limit: 32, Namespace: "activitypub", Owner: fmt.Sprintf("w#%d", claims),
						LeaseUntil: at.Add(time.Minute), MaxPerHost: 4})
					if err != nil {
						b.Fatal(err)
					}
					claims++
					if len(batch.Registrations) == 0 {
						b.Fatalf("nothing due with %d of %d done", done, n)
					}
					for _, st := range batch.Registrations {
						if err := s.Advance(ctx, st.Claim(), 2); err != nil {
							b.Fatal(err)
						}
					}
					done += len(batch.Registrations)
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n)/float64(b.N), "µs/delivery")
				b.ReportMetric(float64(claims), "claims")
				s.Close()
			}
		})
	}
}

// BenchmarkSubscribeAmongMany: Subscribe again, unchanged, one of 100
// subscriptions of one prefix over 20 streams (2,000 registrations): what
// it reads and writes is that subscription's, not its neighbours'.
func BenchmarkSubscribeAmongMany(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	for i := range 20 {
		if _, err := s.Append(ctx, fmt.Sprintf("t/%d", i), benchEntries(fmt.Sprint("e", i), 1)...); err != nil {
			b.Fatal(err)
		}
	}
	sub := func(i int) store.Subscription {
		return store.Subscription{Prefix: "t/", ID: fmt.Sprintf("s%d", i), Namespace: "webhook", URL: "https://receiver.example/" + fmt.Sprint(i)}
	}
	for i := range 100 {
		if _, err := s.Subscribe(ctx, sub(i), store.Subscription{}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		st, err := s.Subscribe(ctx, sub(7), sub(7)) // the same again, over itself
		if err != nil || st.Streams != 20 || st.ID != "s7" {
			b.Fatal(st, err)
		}
	}
}
