package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/heraldpush/herald/bench/internal/wire"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// pruneResult is one run of the prune workload.
type pruneResult struct {
	recPerSec, walPer          sample // pruning alone: records removed per second, WAL bytes per record removed
	baseP50, baseP99           sample // append latency without pruning
	duringP50, duringP99       sample // append latency while a prune pass runs
	duringPassSec, baseRecsSec sample // the pass's duration beside appends; appends/s without pruning
}

// prune measures what retention costs on PostgreSQL: a journal of
// cfg.pruneRecords acknowledged records (100 streams, one registration each,
// its cursor past the head) is pruned (1) alone, for its rate and WAL, and
// (2) while 8 writers append to other streams, against the same writers
// without pruning, for the latency the producer sees.
func prune(ctx context.Context, e *env, cfg config, rep *report) error {
	var res pruneResult
	for run := 1; run <= cfg.runs; run++ {
		db := fmt.Sprintf("prune_%d", run)
		dbURL, err := e.heraldDB(ctx, db)
		if err != nil {
			return err
		}
		st, err := postgres.Open(ctx, withPool(dbURL, 16), postgres.WithKeyring(keyring))
		if err != nil {
			return err
		}
		logf("prune run %d/%d: filling %d records", run, cfg.runs, cfg.pruneRecords)
		if err := fillAcknowledged(ctx, st, "fill-a", cfg.pruneRecords); err != nil {
			st.Close()
			return err
		}
		var took time.Duration
		var n int
		d, err := e.measure(ctx, dbURL, db, func() (err error) {
			took, n, err = prunePass(ctx, st)
			return err
		})
		if err != nil {
			st.Close()
			return err
		}
		res.recPerSec = append(res.recPerSec, float64(n)/took.Seconds())
		res.walPer = append(res.walPer, float64(d.wal)/float64(max(n, 1)))
		logf("  alone: %d records in %v", n, took.Round(time.Millisecond))

		c := appendCase{streams: 1000, writers: 8, batch: 1}
		total, lat, took, err := appendFor(ctx, st, c, "base-", cfg.appendFor)
		if err != nil {
			st.Close()
			return err
		}
		slices.Sort(lat)
		res.baseP50 = append(res.baseP50, ms(lat[len(lat)/2]))
		res.baseP99 = append(res.baseP99, ms(lat[len(lat)*99/100]))
		res.baseRecsSec = append(res.baseRecsSec, float64(total)/took.Seconds())

		if err := fillAcknowledged(ctx, st, "fill-b", cfg.pruneRecords); err != nil {
			st.Close()
			return err
		}
		passDone := make(chan time.Duration, 1)
		go func() {
			took, _, _ := prunePass(ctx, st)
			passDone <- took
		}()
		_, lat, _, err = appendFor(ctx, st, c, "during-", cfg.appendFor)
		pass := <-passDone
		st.Close()
		if err != nil {
			return err
		}
		slices.Sort(lat)
		res.duringP50 = append(res.duringP50, ms(lat[len(lat)/2]))
		res.duringP99 = append(res.duringP99, ms(lat[len(lat)*99/100]))
		res.duringPassSec = append(res.duringPassSec, pass.Seconds())
		logf("  beside appends: pass %v; append p99 %.2f ms (%.2f ms without)", pass.Round(time.Millisecond),
			res.duringP99[len(res.duringP99)-1], res.baseP99[len(res.baseP99)-1])
		e.dropDB(ctx, db)
	}
	rep.printf("### Pruning\n\n")
	rep.printf("A journal of %d acknowledged records (100 streams, one registration each, its cursor past the head; the %d-byte payload) pruned with `Store.Prune` in batches of %d until done: alone, and while 8 writers `Append` to 1,000 other streams for %v (the pass starts with them). Latency is one `Append`; the baseline is the same writers on the same database with no prune running, measured in the same run.\n\n",
		cfg.pruneRecords, wire.PayloadBytes, store.DefaultPruneBatch, cfg.appendFor)
	rep.printf("| pruning alone: records/s | WAL B/record pruned | append p50 ms without / during | append p99 ms without / during | p99 during / without | pass beside appends, s |\n|---:|---:|---:|---:|---:|---:|\n")
	rep.printf("| %s | %s | %s / %s | %s / %s | %s | %s |\n\n", res.recPerSec.cell(0), res.walPer.cell(0),
		fmtNum(res.baseP50.median(), 2), fmtNum(res.duringP50.median(), 2),
		fmtNum(res.baseP99.median(), 2), fmtNum(res.duringP99.median(), 2),
		ratio(res.duringP99, res.baseP99), res.duringPassSec.cell(2))
	return nil
}

// fillAcknowledged appends n records over 100 streams in batches of 500 and
// registers one receiver per stream whose cursor is past the head, so that
// every record may be pruned.
func fillAcknowledged(ctx context.Context, st *postgres.Store, prefix string, n int) error {
	per := n / 100
	for s := range 100 {
		stream := fmt.Sprintf("%s/%d", prefix, s)
		for i := 0; i < per; i += 500 {
			batch := make([]journal.Entry, min(500, per-i))
			for j := range batch {
				batch[j] = journal.Entry{ID: fmt.Sprintf("%s-%d-%d", prefix, s, i+j), Kind: "order.updated",
					ContentType: "application/json", Payload: wire.Payload(i + j)}
			}
			if _, err := st.Append(ctx, stream, batch...); err != nil {
				return err
			}
		}
		_, err := st.Register(ctx, push.Registration{Stream: stream, ID: "done", Namespace: "webhook",
			URL: "https://receiver.example/", NextSeq: uint64(per) + 1})
		if err != nil {
			return err
		}
	}
	return nil
}

// prunePass prunes in batches until nothing more is due, at an instant past
// every record's retention.
func prunePass(ctx context.Context, st *postgres.Store) (time.Duration, int, error) {
	start := time.Now()
	q := store.PruneQuery{At: time.Now().Add(time.Hour), Retain: 0}
	n := 0
	for {
		rep, err := st.Prune(ctx, q)
		if err != nil {
			return 0, n, err
		}
		n += rep.Records
		if !rep.More {
			return time.Since(start), n, nil
		}
	}
}
