package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/bench/internal/wire"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/transport"
)

const (
	regsPerStream = 10
	dueCount      = 100
)

func idle(ctx context.Context, e *env, cfg config, rep *report) error {
	var none, due, noneP99, dueP99, loadSecs sample
	for run := 1; run <= cfg.runs; run++ {
		db := fmt.Sprintf("idle_%d", run)
		dbURL, err := e.heraldDB(ctx, db)
		if err != nil {
			return err
		}
		logf("idle run %d/%d: loading %d registrations", run, cfg.runs, cfg.idleRegs)
		g := fmt.Sprintf("idle-due-run%d", run)
		t0 := time.Now()
		dueStreams, err := loadIdle(ctx, dbURL, cfg.idleRegs, e.recvURL+"/d/"+g+"/")
		if err != nil {
			return fmt.Errorf("bulk load: %w", err)
		}
		loadSecs = append(loadSecs, time.Since(t0).Seconds())
		logf("  loaded in %v", time.Since(t0).Round(time.Second))
		n, d, err := sweeps(ctx, dbURL, cfg, dueStreams)
		if err != nil {
			return err
		}
		slices.Sort(n)
		slices.Sort(d)
		none = append(none, ms(n[len(n)/2]))
		noneP99 = append(noneP99, ms(n[len(n)*99/100]))
		due = append(due, ms(d[len(d)/2]))
		dueP99 = append(dueP99, ms(d[len(d)*99/100]))
		logf("  none due %.2f ms, %d due %.2f ms (medians)", ms(n[len(n)/2]), dueCount, ms(d[len(d)/2]))
		if _, err := e.wait(ctx, g, int64(dueCount*len(d)), nil); err != nil {
			return err
		}
		e.dropDB(ctx, db)
	}
	rep.printf("### Idle cost: one sweep over %s registrations\n\n", fmtNum(float64(cfg.idleRegs), 0))
	rep.printf("%s webhook registrations, %d per stream over %s streams, bulk-loaded with `INSERT … SELECT FROM generate_series` into herald's tables (migrations/001_init.up.sql: each stream with one record and head 1, each registration's cursor at 2, past the head, and no stream pending, which is the state Register, Append and the sweeps that drained them leave), then `VACUUM (ANALYZE)` and `CHECKPOINT` (load: %s s). One sweep is `Worker.RunOnce(ctx, now, 256)` in the benchmark process (webhook projection, HTTP transport, MaxInFlight %d). **None due**: %d sweeps after 3 warm-up sweeps. **%d due**: before each of %d sweeps (not timed) one registration in each of %d streams is set back to cursor 1 and its stream marked pending, as an append does; the sweep claims, reads, POSTs the %d records to the receiver and advances the %d cursors.\n\n",
		fmtNum(float64(cfg.idleRegs), 0), regsPerStream, fmtNum(float64(cfg.idleRegs/regsPerStream), 0), loadSecs.cell(0), cfg.conc,
		cfg.idleSweeps, dueCount, cfg.idleSweeps, dueCount, dueCount, dueCount)
	rep.printf("| case | sweep p50 ms | sweep p99 ms |\n|---|---:|---:|\n")
	rep.printf("| none due | %s | %s |\n", none.cell(2), noneP99.cell(2))
	rep.printf("| %d due | %s | %s |\n\n", dueCount, due.cell(2), dueP99.cell(2))
	return nil
}

// loadIdle bulk-loads regs registrations and returns the streams whose first
// registration the "due" case sets back.
func loadIdle(ctx context.Context, dbURL string, regs int, urlPrefix string) ([]string, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	cfg, err := webhook.Config{Secrets: []string{wire.Secret(0)}}.Encode()
	if err != nil {
		return nil, err
	}
	streams := regs / regsPerStream
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO herald_stream (stream, head, pending)
SELECT 'idle/' || lpad(g::text, 7, '0'), 1, false FROM generate_series(1, $1::int) g`, []any{streams}},
		{`INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at)
SELECT 'idle/' || lpad(g::text, 7, '0'), 'idle-' || g, 'order.updated', 'application/json', $2::bytea, false, '\x00'::bytea, now()
FROM generate_series(1, $1::int) g`, []any{streams, wire.Payload(0)}},
		{`INSERT INTO herald_seq (id, stream, seq) SELECT 'idle-' || g, 'idle/' || lpad(g::text, 7, '0'), 1 FROM generate_series(1, $1::int) g`, []any{streams}},
		{`UPDATE herald_sequencer SET done = pg_current_snapshot()`, nil},
		{`INSERT INTO herald_registration (stream, id, namespace, url, config, next_seq, next_attempt_at)
SELECT 'idle/' || lpad(g::text, 7, '0'), 'rcv-' || r, 'webhook', $2 || g || '-' || r, $3::bytea, 2, '2000-01-01T00:00:00Z'
FROM generate_series(1, $1::int) g, generate_series(0, $4::int - 1) r`, []any{streams, urlPrefix, []byte(cfg), regsPerStream}},
		{`VACUUM (ANALYZE)`, nil},
		{`CHECKPOINT`, nil},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			return nil, fmt.Errorf("%.40s…: %w", q.sql, err)
		}
	}
	var due []string
	for i := range dueCount {
		due = append(due, fmt.Sprintf("idle/%07d", 1+i*(streams/dueCount)))
	}
	return due, nil
}

// sweeps times cfg.idleSweeps sweeps with none due, then as many with
// dueCount due.
func sweeps(ctx context.Context, dbURL string, cfg config, dueStreams []string) (none, due []time.Duration, err error) {
	st, err := postgres.Open(ctx, dbURL, postgres.WithKeyring(keyring))
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, MaxIdleConnsPerHost: cfg.conc})
	if err != nil {
		return nil, nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, err := push.NewWorker(st, st, tr, webhook.New(), push.WithMaxInFlight(cfg.conc),
		push.WithMaxPerHost(dueCount), // the receiver process stands in for the 100 receivers' hosts
		push.WithLogger(quiet))
	if err != nil {
		return nil, nil, err
	}
	sweep := func() (time.Duration, push.SweepReport, error) {
		t0 := time.Now()
		r, err := w.RunOnce(ctx, time.Now(), 256)
		return time.Since(t0), r, err
	}
	for range 3 {
		if _, _, err := sweep(); err != nil {
			return nil, nil, err
		}
	}
	for range cfg.idleSweeps {
		d, r, err := sweep()
		if err != nil {
			return nil, nil, err
		}
		if r.Registrations != 0 {
			return nil, nil, fmt.Errorf("an idle sweep claimed %d registrations", r.Registrations)
		}
		none = append(none, d)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close(ctx)
	for range cfg.idleSweeps {
		if _, err := conn.Exec(ctx, `UPDATE herald_registration SET next_seq = 1 WHERE id = 'rcv-0' AND stream = ANY($1);
`, dueStreams); err != nil {
			return nil, nil, err
		}
		if _, err := conn.Exec(ctx, `UPDATE herald_stream SET pending = true WHERE stream = ANY($1)`, dueStreams); err != nil {
			return nil, nil, err
		}
		d, r, err := sweep()
		if err != nil {
			return nil, nil, err
		}
		if r.Deliveries != dueCount {
			return nil, nil, fmt.Errorf("a sweep with %d due delivered %d (%+v)", dueCount, r.Deliveries, r)
		}
		due = append(due, d)
	}
	return none, due, nil
}
