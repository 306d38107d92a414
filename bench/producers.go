package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/heraldpush/herald/bench/internal/wire"
)

// producerVariant is one way the application's transaction writes its
// record beside its own row.
type producerVariant struct {
	name string
	via  appendVia
}

var producerVariants = []producerVariant{
	{"bare transaction", viaNone},
	{"+ plain row (the floor)", viaPlainRow},
	{"+ PgQ `pgq.insert_event`", viaPgQ},
	{"+ River `InsertTx`", viaRiver},
	{"+ herald `AppendTx`", viaAppendTx},
	{"+ herald `herald_append` (SQL)", viaSQL},
}

// producers measures what each way of writing a record costs the
// application's transaction (issue 31): the bare transaction, the floor
// (a plain INSERT of a record-sized row into a table with a primary key),
// PgQ's insert_event, River's InsertTx, herald's AppendTx and
// herald_append, in turn within each run on one database.
func producers(ctx context.Context, e *env, cfg config, rep *report) error {
	type cell struct{ rate, wal, p99 sample }
	res := make([][]cell, len(producerCases))
	for i := range res {
		res[i] = make([]cell, len(producerVariants))
	}
	pgqMissing := ""
	for run := 1; run <= cfg.runs; run++ {
		db := fmt.Sprintf("producers_%d", run)
		dbURL, err := e.heraldDB(ctx, db)
		if err != nil {
			return err
		}
		if err := execOnce(ctx, dbURL, appTables); err != nil {
			return err
		}
		if err := migrateRiver(ctx, dbURL); err != nil {
			return err
		}
		if err := execOnce(ctx, dbURL, `CREATE EXTENSION pgq; SELECT pgq.create_queue('orders')`); err != nil {
			pgqMissing = err.Error()
			logf("PgQ is not installed in this PostgreSQL (%v): its row is skipped (apt-get install postgresql-15-pgq3)", err)
		}
		for i, c := range producerCases {
			for k := range producerVariants {
				// Each run starts at another variant: a load that rises or
				// falls across a case weighs on each in turn.
				j := (k + run - 1) % len(producerVariants)
				v := producerVariants[j]
				if v.via == viaPgQ && pgqMissing != "" {
					continue
				}
				logf("producers %v, %s, run %d/%d", c, v.name, run, cfg.runs)
				var out produced
				d, err := e.measure(ctx, dbURL, db, func() (err error) {
					out, err = produceFor(ctx, dbURL, c, v.via, fmt.Sprintf("p%d-c%d-%d-", run, i, j), cfg.producerFor)
					return err
				})
				if err != nil {
					return fmt.Errorf("%v, %s: %w", c, v.name, err)
				}
				r := &res[i][j]
				rate := float64(out.n) / out.took.Seconds()
				r.rate, r.wal, r.p99 = append(r.rate, rate), append(r.wal, float64(d.wal)/float64(out.n)), append(r.p99, out.p99)
				logf("  %.0f transactions/s, p99 %.1f ms, %.0f WAL B/transaction; backends: %s", rate, out.p99, float64(d.wal)/float64(out.n), out.waits)
			}
		}
		e.dropDB(ctx, db)
	}
	rep.printf("### The producer's cost: the application's transaction with one record, every way\n\n")
	rep.printf("W goroutines (one connection each) run the application's transaction in a loop for %v per case: `BEGIN; INSERT INTO app_order (id, body) VALUES (…, %d bytes); COMMIT`, and the same with one record of a %d-byte payload written between the INSERT and the COMMIT: a second plain `INSERT` into a table with a text primary key (`app_outbox`: id, stream, kind, payload, digest, appended_at), the floor of any design that writes the record in the caller's transaction; `SELECT pgq.insert_event('orders', …)` (PgQ 3, the extension, no ticker running); River's `InsertTx` of one job (an insert-only client, River's defaults); herald's `AppendTx`; and `SELECT herald_append(…)`. With 1,000 streams each transaction takes the next stream of a shared counter (the others write the stream name in their row). The variants run in turn within each run, on one database, each run starting at the next variant; beside the herald variants one `RunSequencer` numbers the records (its own pool of 2 connections, as `herald run` runs it), and its writes are in the WAL figure (per transaction, after it caught up). Ratios are to the bare transaction and to the floor of the same case and run.\n\n",
		cfg.producerFor, wire.PayloadBytes, wire.PayloadBytes)
	if pgqMissing != "" {
		rep.printf("PgQ is not installed in this PostgreSQL, so its row is missing (`apt-get install postgresql-15-pgq3`; %s).\n\n", strings.TrimSpace(pgqMissing))
	}
	rep.printf("| case | variant | tx/s | × bare | × floor | p99 ms | WAL B/tx |\n|---|---|---:|---:|---:|---:|---:|\n")
	for i, c := range producerCases {
		for j, v := range producerVariants {
			r := res[i][j]
			if len(r.rate) == 0 {
				continue
			}
			rep.printf("| %v | %s | %s | %s | %s | %s | %s |\n", c, v.name, r.rate.cell(0), ratio(r.rate, res[i][0].rate),
				ratio(r.rate, res[i][1].rate), fmtNum(r.p99.median(), 1), r.wal.cell(0))
		}
	}
	rep.printf("\n")
	return nil
}

// migrateRiver creates River's tables in the database at dbURL.
func migrateRiver(ctx context.Context, dbURL string) error {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	mig, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	_, err = mig.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// appTables are the application's own table (app_order) and the floor's
// (app_outbox: a record-sized row with a text primary key).
const appTables = `CREATE TABLE app_order (id text PRIMARY KEY, body bytea NOT NULL);
CREATE TABLE app_outbox (id text PRIMARY KEY, stream text NOT NULL, kind text NOT NULL, payload bytea NOT NULL,
    digest bytea NOT NULL, appended_at timestamptz NOT NULL)`
