package main

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/store/postgres"
)

// stmtStat is one statement's share of a latency case, from
// pg_stat_statements (-lat-statements): what the server spent executing
// it, in the case's database, over the measured window.
type stmtStat struct {
	query  string
	calls  int64
	rows   int64
	execMS float64 // total_exec_time: wall time in the executor, waits included
	planMS float64 // total_plan_time: wall time planning (pg_stat_statements.track_planning)
	plans  int64
	walB   int64
	window float64 // seconds counted
}

// preloadStmts restarts the benchmark's cluster with pg_stat_statements
// loaded (-lat-statements). The extension adds a little CPU to every
// statement, so a measuring run is not a figure to compare with others.
func preloadStmts(ctx context.Context, e *env) error {
	exec := func(qs ...string) error {
		conn, err := pgx.Connect(ctx, e.pg.URL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		for _, q := range qs {
			if _, err := conn.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}
	if err := exec("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"); err != nil {
		return err
	}
	if err := e.pg.Restart(); err != nil {
		return err
	}
	// The extension's own settings exist once it is loaded.
	return exec("ALTER SYSTEM SET pg_stat_statements.track_planning = on", "SELECT pg_reload_conf()")
}

// resetStmts creates the extension in the store's database and forgets
// what it counted so far.
func resetStmts(ctx context.Context, st *postgres.Store) error {
	if _, err := st.Pool().Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return err
	}
	_, err := st.Pool().Exec(ctx, "SELECT pg_stat_statements_reset()")
	return err
}

// readStmts returns the statements run in the store's database since
// resetStmts, the costliest first; window is how long they were counted.
func readStmts(ctx context.Context, st *postgres.Store, window time.Duration) ([]stmtStat, error) {
	rows, err := st.Pool().Query(ctx, `SELECT query, calls, rows, total_exec_time, total_plan_time, plans, wal_bytes::bigint
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query NOT LIKE '%pg_stat_statements%'
ORDER BY total_exec_time + total_plan_time DESC`)
	if err != nil {
		return nil, err
	}
	var out []stmtStat
	var s stmtStat
	_, err = pgx.ForEachRow(rows, []any{&s.query, &s.calls, &s.rows, &s.execMS, &s.planMS, &s.plans, &s.walB}, func() error {
		s.window = window.Seconds()
		out = append(out, s)
		return nil
	})
	return out, err
}

// printStmts writes one case's statement table, summed over its runs:
// the statements that together make 99% of the time, then the rest.
func printStmts(rep *report, name string, runs [][]stmtStat) {
	var (
		window float64
		order  []string
	)
	byQuery := map[string]*stmtStat{}
	for _, run := range runs {
		if len(run) > 0 {
			window += run[0].window
		}
		for _, s := range run {
			m := byQuery[s.query]
			if m == nil {
				m = &stmtStat{query: s.query}
				byQuery[s.query] = m
				order = append(order, s.query)
			}
			m.calls += s.calls
			m.rows += s.rows
			m.execMS += s.execMS
			m.planMS += s.planMS
			m.plans += s.plans
			m.walB += s.walB
		}
	}
	stmts := make([]stmtStat, 0, len(order))
	var total float64
	for _, q := range order {
		m := byQuery[q]
		m.window = window
		stmts = append(stmts, *m)
		total += m.execMS + m.planMS
	}
	if total == 0 {
		return
	}
	slices.SortStableFunc(stmts, func(a, b stmtStat) int { return cmp.Compare(b.execMS+b.planMS, a.execMS+a.planMS) })
	rep.printf("Statements of %s, %d run(s), %.1f s counted (pg_stat_statements, track_planning on; wall time planning and executing, waits included; share of the sum of both over all statements):\n\n", name, len(runs), window)
	rep.printf("| statement | calls/s | exec µs/call | plans/call | plan µs/plan | rows/call | WAL B/call | share |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	var shown float64
	rest := stmtStat{query: "(the rest)", window: window}
	for _, s := range stmts {
		if shown >= 0.99*total {
			rest.calls += s.calls
			rest.rows += s.rows
			rest.execMS += s.execMS
			rest.planMS += s.planMS
			rest.plans += s.plans
			rest.walB += s.walB
			continue
		}
		shown += s.execMS + s.planMS
		printStmt(rep, s, total)
	}
	if rest.calls > 0 {
		printStmt(rep, rest, total)
	}
	rep.printf("\n")
}

func printStmt(rep *report, s stmtStat, total float64) {
	q := strings.Join(strings.Fields(s.query), " ")
	if len(q) > 110 {
		q = q[:110] + "…"
	}
	q = strings.ReplaceAll(q, "|", "\\|")
	per := func(v float64) float64 {
		if s.calls == 0 {
			return 0
		}
		return v / float64(s.calls)
	}
	perPlan := 0.0
	if s.plans > 0 {
		perPlan = s.planMS * 1000 / float64(s.plans)
	}
	rep.printf("| `%s` | %s | %s | %s | %s | %s | %s | %s%% |\n", q, fmtNum(float64(s.calls)/s.window, 1), fmtNum(per(s.execMS*1000), 0),
		fmtNum(per(float64(s.plans)), 2), fmtNum(perPlan, 0),
		fmtNum(per(float64(s.rows)), 1), fmtNum(per(float64(s.walB)), 0), fmtNum(100*(s.execMS+s.planMS)/total, 1))
}
