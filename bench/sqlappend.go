package main

import (
	"context"
	"fmt"

	"github.com/heraldpush/herald/bench/internal/wire"
	"github.com/heraldpush/herald/store/postgres"
)

// sqlAppendCases: the 1,000-stream cases of the producer workload and the
// hot stream at 32 writers.
var sqlAppendCases = []producerCase{{1000, 1}, {1000, 32}, {1, 32}}

// sqlAppend measures herald_append (issue 18) beside AppendTx: the
// producer workload's transaction, bare, with AppendTx, and with SELECT
// herald_append(…) instead, in turn within each run on one database, the
// sequencer running beside both herald cases.
func sqlAppend(ctx context.Context, e *env, cfg config, rep *report) error {
	vias := []appendVia{viaNone, viaAppendTx, viaSQL}
	res := make([][3]sample, len(sqlAppendCases))
	for run := 1; run <= cfg.runs; run++ {
		db := fmt.Sprintf("sqlappend_%d", run)
		dbURL, err := e.createDB(ctx, db)
		if err != nil {
			return err
		}
		if _, err := postgres.MigrateUp(ctx, dbURL); err != nil {
			return err
		}
		if err := execOnce(ctx, dbURL, `CREATE TABLE app_order (id text PRIMARY KEY, body bytea NOT NULL)`); err != nil {
			return err
		}
		for i, c := range sqlAppendCases {
			for j, via := range vias {
				logf("sqlappend %v, via %d, run %d/%d", c, via, run, cfg.runs)
				out, err := produceFor(ctx, dbURL, c, via, fmt.Sprintf("s%d-c%d-%d-", run, i, via), cfg.producerFor)
				if err != nil {
					return fmt.Errorf("%v: %w", c, err)
				}
				rate := float64(out.n) / out.took.Seconds()
				res[i][j] = append(res[i][j], rate)
				logf("  %.0f transactions/s, p99 %.1f ms", rate, out.p99)
			}
		}
		e.dropDB(ctx, db)
	}
	rep.printf("### 3c. Appending from SQL: herald_append beside AppendTx\n\n")
	rep.printf("The producer workload's transaction (3a) for %v per case: bare, with one `AppendTx`, and with one `SELECT herald_append($1, $2, 'order.updated', $3::bytea, 'application/json')` of the same %d-byte record instead (no herald Go code in the transaction), in turn within each run on one database; one `RunSequencer` beside both herald cases.\n\n",
		cfg.producerFor, wire.PayloadBytes)
	rep.printf("| case | bare tx/s | AppendTx tx/s | herald_append tx/s | AppendTx / bare | herald_append / bare | herald_append / AppendTx |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for i, c := range sqlAppendCases {
		r := res[i]
		rep.printf("| %v | %s | %s | %s | %s | %s | %s |\n", c, r[0].cell(0), r[1].cell(0), r[2].cell(0),
			ratio(r[1], r[0]), ratio(r[2], r[0]), ratio(r[2], r[1]))
	}
	rep.printf("\n")
	return nil
}
