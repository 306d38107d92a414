package push_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/transport"
)

// BenchmarkFanout is the worker's own cost per delivery in a fan-out, for
// iterating on it without a database, beside the bare client's in the same
// run: one op is one delivery of a record to one of 100 Standard Webhooks
// receivers (signed, 256-byte payloads), 64 in flight, to a loopback
// receiver. "worker" goes through the real HTTP transport and the webhook
// projection with the memory store, sweeping at explicit instants; "bare"
// POSTs the same signed requests from 64 goroutines. cpu-µs/delivery is
// the process's CPU (user + system, the receiver's share included: it runs
// in this process) per delivery. bench/ measures the daemon on PostgreSQL
// (BENCHMARKS.md).
func BenchmarkFanout(b *testing.B) {
	const regs, inFlight = 100, 64
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got.Add(1)
	}))
	defer srv.Close()
	secrets := make([]string, regs)
	for i := range secrets {
		sum := sha256.Sum256(fmt.Appendf(nil, "bench-secret-%d", i))
		secrets[i] = "whsec_" + base64.StdEncoding.EncodeToString(sum[:])
	}
	payload := []byte(`{"type":"order.updated","note":"` + strings.Repeat("x", 222) + `"}`)
	report := func(b *testing.B, cpu0 time.Duration, total int64) {
		b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(total), "cpu-µs/delivery")
	}

	// The bare client: the same signed requests from inFlight goroutines
	// with a keep-alive client, no store, no worker: the floor.
	b.Run("bare", func(b *testing.B) {
		client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: inFlight}}
		hooks := make([]*standardwebhooks.Webhook, regs)
		for i, s := range secrets {
			wh, err := standardwebhooks.NewWebhook(s)
			if err != nil {
				b.Fatal(err)
			}
			hooks[i] = wh
		}
		var next atomic.Int64
		total := int64(b.N)
		cpu0 := processCPU()
		b.ResetTimer()
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				for k := next.Add(1) - 1; k < total; k = next.Add(1) - 1 {
					route, id := int(k%regs), "evt-"+strconv.FormatInt(k/regs, 10)
					now := time.Now()
					sig, err := hooks[route].Sign(id, now, payload)
					if err != nil {
						b.Error(err)
						return
					}
					req, err := http.NewRequestWithContext(b.Context(), http.MethodPost, fmt.Sprintf("%s/r/%d", srv.URL, route), bytes.NewReader(payload))
					if err != nil {
						b.Error(err)
						return
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Webhook-Id", id)
					req.Header.Set("Webhook-Timestamp", strconv.FormatInt(now.Unix(), 10))
					req.Header.Set("Webhook-Signature", sig)
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		report(b, cpu0, total)
	})

	b.Run("worker", func(b *testing.B) {
		st := memory.New()
		for i, secret := range secrets {
			cfg, err := webhook.Config{Secrets: []string{secret}}.Encode()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := st.Register(b.Context(), push.Registration{Stream: "fanout", ID: fmt.Sprintf("r%03d", i), Namespace: webhook.Namespace,
				URL: fmt.Sprintf("%s/r/%d", srv.URL, i), Config: cfg}); err != nil {
				b.Fatal(err)
			}
		}
		tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, MaxIdleConnsPerHost: inFlight})
		if err != nil {
			b.Fatal(err)
		}
		w, err := push.NewWorker(st, st, tr, webhook.New(), push.WithMaxInFlight(inFlight), push.WithMaxPerHost(push.MaxPerHostLimit),
			push.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		records := (b.N + regs - 1) / regs
		es := make([]journal.Entry, records)
		for i := range es {
			es[i] = journal.Entry{ID: fmt.Sprintf("evt-%d", i), Kind: "order.updated", ContentType: "application/json", Payload: payload}
		}
		if _, err := st.Append(b.Context(), "fanout", es...); err != nil {
			b.Fatal(err)
		}
		got.Store(0)
		total := int64(records * regs)
		cpu0 := processCPU()
		b.ResetTimer()
		for sweep := 0; got.Load() < total; sweep++ {
			if _, err := w.RunOnce(b.Context(), at(sweep), regs); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		report(b, cpu0, total)
	})
}

// processCPU is this process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
