package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// writeFor runs writers goroutines for d, each calling op in a loop until
// d has passed or ctx ends: op(w, k, n) with w the writer (0-based), k its
// own call count (0-based) and n a counter shared by every writer (from 1),
// for the workloads that spread calls over streams. It returns each call's
// latency, the time from the start until the last writer stopped, and the
// first error, which stops the writer that met it.
func writeFor(ctx context.Context, writers int, d time.Duration, op func(w, k int, n int64) error) ([]time.Duration, time.Duration, error) {
	var (
		mu       sync.Mutex
		lats     []time.Duration
		next     atomic.Int64
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for w := range writers {
		wg.Go(func() {
			var mine []time.Duration
			defer func() {
				mu.Lock()
				lats = append(lats, mine...)
				mu.Unlock()
			}()
			for k := 0; time.Now().Before(deadline) && ctx.Err() == nil; k++ {
				t0 := time.Now()
				if err := op(w, k, next.Add(1)); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
			}
		})
	}
	wg.Wait()
	return lats, time.Since(start), firstErr
}
