package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/heraldpush/herald/bench/internal/wire"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store/postgres"
)

// appendCase is writers goroutines appending batch records per transaction
// to streams streams.
type appendCase struct{ streams, writers, batch int }

func (c appendCase) String() string {
	s := fmt.Sprintf("%d stream(s), %d writer(s)", c.streams, c.writers)
	if c.batch > 1 {
		s += fmt.Sprintf(", batches of %d", c.batch)
	}
	return s
}

type appendResult struct{ recPerSec, p50, p99, walPer sample }

func appends(ctx context.Context, e *env, cfg config, rep *report) error {
	res := make([]appendResult, len(cfg.appendCases))
	for run := 1; run <= cfg.runs; run++ {
		db := fmt.Sprintf("appends_%d", run)
		dbURL, err := e.heraldDB(ctx, db)
		if err != nil {
			return err
		}
		for i, c := range cfg.appendCases {
			logf("appends %v run %d/%d", c, run, cfg.runs)
			var n int64
			var lat []time.Duration
			var took time.Duration
			d, err := e.measure(ctx, dbURL, db, func() error {
				st, err := postgres.Open(ctx, withPool(dbURL, c.writers), postgres.WithKeyring(keyring))
				if err != nil {
					return err
				}
				defer st.Close()
				if n, lat, took, err = appendFor(ctx, st, c, fmt.Sprintf("c%d-", i), cfg.appendFor); err != nil {
					return fmt.Errorf("%v: %w", c, err)
				}
				return nil
			})
			if err != nil {
				return err
			}
			slices.Sort(lat)
			r := &res[i]
			r.recPerSec = append(r.recPerSec, float64(n)/took.Seconds())
			r.p50 = append(r.p50, ms(lat[len(lat)/2]))
			r.p99 = append(r.p99, ms(lat[len(lat)*99/100]))
			r.walPer = append(r.walPer, float64(d.wal)/float64(n))
			logf("  %.0f records/s", float64(n)/took.Seconds())
		}
		e.dropDB(ctx, db)
	}
	rep.printf("### Appends\n\n")
	rep.printf("`Store.Append` (its own transaction: BEGIN, check the seal and look the ids up, insert, COMMIT; then a sequencer step, waiting for the sequencer's lock, numbers the records and Append reads their seqs back) for %v per case, by W goroutines in a loop; each record has the %d-byte payload. With 1,000 streams each append goes to the next stream of a shared counter (streams are created by their first append). Batched: one `Append` of N records to one stream. Latency is one `Append` call (one transaction), p50 and p99 over the run's calls (median over runs). WAL B is per record.\n\n", cfg.appendFor, wire.PayloadBytes)
	rep.printf("| case | records/s | vs 1 stream, 1 writer | p50 ms | p99 ms | WAL B/record |\n|---|---:|---:|---:|---:|---:|\n")
	for i, c := range cfg.appendCases {
		r := res[i]
		rep.printf("| %v | %s | %s | %s | %s | %s |\n", c, r.recPerSec.cell(0), ratio(r.recPerSec, res[0].recPerSec),
			fmtNum(r.p50.median(), 2), fmtNum(r.p99.median(), 2), r.walPer.cell(0))
	}
	rep.printf("\n")
	return nil
}

// appendFor appends for d and returns the records appended, each call's
// latency and the time taken.
func appendFor(ctx context.Context, st *postgres.Store, c appendCase, prefix string, d time.Duration) (int64, []time.Duration, time.Duration, error) {
	lats, took, err := writeFor(ctx, c.writers, d, func(w, k int, n int64) error {
		stream := fmt.Sprintf("append/%d", (n-1)%int64(c.streams))
		entries := make([]journal.Entry, c.batch)
		for j := range entries {
			entries[j] = journal.Entry{ID: fmt.Sprintf("%sw%d-%d-%d", prefix, w, k, j), Kind: "order.updated",
				ContentType: "application/json", Payload: wire.Payload(k)}
		}
		_, err := st.Append(ctx, stream, entries...)
		return err
	})
	if err == nil && len(lats) == 0 {
		err = fmt.Errorf("no append finished in %v", d)
	}
	return int64(len(lats) * c.batch), lats, took, err
}
