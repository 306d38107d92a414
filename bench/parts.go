package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/store/postgres"
)

// outboxDigest stands in for the record's digest in the plain-row variant.
var outboxDigest = sha256.Sum256([]byte("order.updated"))

// partsVariant is one way the producer's transaction is run.
type partsVariant struct {
	name        string
	via         appendVia
	sequencer   bool
	seqInterval time.Duration // the sequencer's longest interval while records come; 0: the default
}

var partsVariants = []partsVariant{
	{"bare", viaNone, false, 0},
	{"+ plain row", viaPlainRow, false, 0},
	{"+ AppendTx, no sequencer", viaAppendTx, false, 0},
	{"+ AppendTx, sequencer at a fixed 5 ms", viaAppendTx, true, 5 * time.Millisecond},
	{"+ AppendTx, sequencer beside", viaAppendTx, true, 0},
}

// parts decomposes the producer's cost (issue 15): the bare transaction;
// the same with a second plain INSERT of a record-sized row into a table
// with one primary key (the floor of any design that writes the record in
// the caller's transaction); with AppendTx and no sequencer running (the
// INSERT's own cost; the records are numbered after the timed part, and that
// step's WAL is measured apart); with AppendTx and the sequencer beside the
// writers (the daemon's case), at a fixed 5 ms cadence and at the
// default adaptive one. The variants alternate within each run.
func parts(ctx context.Context, e *env, cfg config, rep *report) error {
	type cell struct {
		rate, wal, seqWAL, steps sample
		stepsPerSec, perStep     sample            // sequencer steps/s, records per step
		cpu                      map[string]sample // µs per transaction, by role (activity.cpu)
		pgCPU, autovacuums       sample            // the whole server's CPU µs per transaction (exited processes too); autovacuum runs
		vacCPU, vacWAL           sample            // a VACUUM of the variant's table after it: CPU µs and WAL B per transaction
		waits                    string            // the writers' wait events, last run
	}
	res := make([][]cell, len(producerCases))
	for i := range res {
		res[i] = make([]cell, len(partsVariants))
	}
	for run := 1; run <= cfg.runs; run++ {
		db := fmt.Sprintf("parts_%d", run)
		dbURL, err := e.heraldDB(ctx, db)
		if err != nil {
			return err
		}
		if err := execOnce(ctx, dbURL, appTables); err != nil {
			return err
		}
		for i, c := range producerCases {
			for j, v := range partsVariants {
				logf("parts %v, %s, run %d/%d", c, v.name, run, cfg.runs)
				var out produced
				d, err := e.measure(ctx, dbURL, db, func() (err error) {
					out, err = produceWith(ctx, dbURL, c, v.via, v.sequencer, v.seqInterval, fmt.Sprintf("p%d-c%d-%d-", run, i, j), cfg.producerFor)
					return err
				})
				if err != nil {
					return fmt.Errorf("%v, %s: %w", c, v.name, err)
				}
				r := &res[i][j]
				rate := float64(out.n) / out.took.Seconds()
				r.rate, r.wal, r.steps = append(r.rate, rate), append(r.wal, float64(d.wal)/float64(out.n)), append(r.steps, float64(out.steps))
				r.stepsPerSec = append(r.stepsPerSec, float64(out.steps)/out.took.Seconds())
				if out.steps > 0 {
					r.perStep = append(r.perStep, float64(out.n)/float64(out.steps))
				}
				if r.cpu == nil {
					r.cpu = map[string]sample{}
				}
				for _, role := range cpuRoles {
					r.cpu[role] = append(r.cpu[role], float64(out.cpu[role].Microseconds())/float64(out.n))
				}
				r.pgCPU = append(r.pgCPU, float64(d.pgCPU.Microseconds())/float64(out.n))
				r.autovacuums, r.waits = append(r.autovacuums, float64(d.autovacuums)), out.waits
				if v.via == viaAppendTx && !v.sequencer {
					// Number them now, in steps of a full page: what
					// sequencing costs in WAL when a step numbers many.
					d2, err := e.measure(ctx, dbURL, db, func() error {
						seqr, err := postgres.Open(ctx, withPool(dbURL, 1), postgres.WithKeyring(keyring))
						if err != nil {
							return err
						}
						defer seqr.Close() // before the snapshot, which waits for the database's clients to leave
						_, err = seqr.Sequence(ctx)
						return err
					})
					if err != nil {
						return err
					}
					r.seqWAL = append(r.seqWAL, float64(d2.wal)/float64(out.n))
				}
				if table := map[appendVia]string{viaPlainRow: "app_outbox", viaAppendTx: "herald_record"}[v.via]; table != "" {
					// What the variant leaves to vacuum on its table
					// (autovacuum would do it later).
					cpu, wal, err := vacuumCost(ctx, dbURL, table)
					if err != nil {
						return err
					}
					r.vacCPU, r.vacWAL = append(r.vacCPU, float64(cpu.Microseconds())/float64(out.n)), append(r.vacWAL, float64(wal)/float64(out.n))
				}
				logf("  %.0f transactions/s, %.0f WAL B/transaction, %d steps; CPU %v; writers: %s", rate, float64(d.wal)/float64(out.n), out.steps, out.cpu, out.waits)
			}
		}
		e.dropDB(ctx, db)
	}
	rep.printf("### The producer's cost, decomposed\n\n")
	rep.printf("The producers workload's transaction for %v per variant, the variants in turn within each run on one database: bare; with a second plain INSERT of a record-sized row (id primary key, stream, kind, the same payload, a digest, a timestamp) instead of AppendTx, the floor of any design that writes the record in the caller's transaction; with AppendTx and no sequencer (the records are numbered after the timed part; that numbering's WAL per record is the last column); with AppendTx and RunSequencer beside the writers, polling at a fixed 5 ms while records come (`WithSequencerInterval(5 * time.Millisecond)`) and as the daemon runs it (its default, adaptive up to `postgres.DefaultSequencerInterval`). Ratios are to the bare transaction of the same case and run.\n\n", cfg.producerFor)
	rep.printf("| case | variant | tx/s | ratio | WAL B/tx | sequencer steps | WAL B/record of a later bulk numbering |\n|---|---|---:|---:|---:|---:|---:|\n")
	for i, c := range producerCases {
		for j, v := range partsVariants {
			r := res[i][j] // cell is "–" for what a variant does not measure
			rep.printf("| %v | %s | %s | %s | %s | %s | %s |\n", c, v.name, r.rate.cell(0), ratio(r.rate, res[i][0].rate), r.wal.cell(0), r.steps.cell(0), r.seqWAL.cell(0))
		}
	}
	rep.printf("\nWhere the time went, per variant: CPU µs per transaction of the server's processes by role (from /proc/<pid>/stat of the backends pg_stat_activity lists, sampled every 10 ms; \"server\" is the whole cluster's, from the postmaster and its children, exited ones included, and includes the bulk numbering after the timed part), of this benchmark process (the Go side of the writers and the sequencer), the sequencer's steps, autovacuum and autoanalyze runs of the database's tables during the case, what a `VACUUM` of the variant's record table right after it costs (the work that variant leaves to autovacuum on that table: both are insert-only, so it marks pages all-visible; herald_seq, the sequencer's table, is not vacuumed here), and what the writers' backends were doing (pg_stat_activity, share of samples; \"CPU\" is active with no wait event).\n\n")
	rep.printf("| case | variant | CPU µs/tx: writers | sequencer | autovacuum | other | server | bench process | steps/s | records/step | autovacuum runs | VACUUM after: CPU µs/tx | WAL B/tx | writers' waits |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for i, c := range producerCases {
		for j, v := range partsVariants {
			r := res[i][j]
			rep.printf("| %v | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c, v.name,
				r.cpu["writers"].cell(0), r.cpu["sequencer"].cell(0), r.cpu["autovacuum"].cell(0), r.cpu["other"].cell(0),
				r.pgCPU.cell(0), r.cpu["bench"].cell(0), r.stepsPerSec.cell(0), r.perStep.cell(1), r.autovacuums.cell(0), r.vacCPU.cell(0), r.vacWAL.cell(0), r.waits)
		}
	}
	rep.printf("\n")
	return nil
}

// cpuRoles are activity.cpu's keys that parts reports.
var cpuRoles = []string{"writers", "sequencer", "autovacuum", "other", "bench"}

// vacuumCost runs VACUUM on table and returns its backend's CPU time and
// the WAL it wrote.
func vacuumCost(ctx context.Context, dbURL, table string) (time.Duration, int64, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	var (
		pid int
		lsn string
		wal int64
	)
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid(), pg_current_wal_lsn()::text`).Scan(&pid, &lsn); err != nil {
		return 0, 0, err
	}
	cpu0 := cpuOf(pid, false)
	if _, err := conn.Exec(ctx, "VACUUM "+pgx.Identifier{table}.Sanitize()); err != nil {
		return 0, 0, err
	}
	cpu1 := cpuOf(pid, false)
	if err := conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::text::pg_lsn)::bigint`, lsn).Scan(&wal); err != nil {
		return 0, 0, err
	}
	return cpu1 - cpu0, wal, nil
}
