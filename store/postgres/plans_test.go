package postgres_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/postgres"
)

// TestAdvanceBatchPlansOnce: AdvanceBatch's two statements run on their
// generic plans, planned once per connection, not once per call (a custom
// plan of unnest, which PostgreSQL kept choosing for batches of a few
// saves, cost more CPU than the statement itself), and the setting that
// makes them so ends with the batch: the connection goes back to the pool
// as it came.
func TestAdvanceBatchPlansOnce(t *testing.T) {
	ctx := t.Context()
	s := oneConnStore(t)
	const regs, batches = 3, 8
	for i := range regs {
		_, err := s.Register(ctx, push.Registration{Stream: "s", ID: fmt.Sprintf("r%d", i), Namespace: "webhook",
			URL: fmt.Sprintf("https://receiver.example/%d", i)})
		require.NoError(t, err)
	}
	for i := range batches {
		_, err := s.Append(ctx, "s", entry(fmt.Sprintf("e%d", i)))
		require.NoError(t, err)
	}
	for i := range batches {
		when := at(120 * (i + 1)) // every lease of the last batch has expired
		due, err := s.Due(ctx, push.DueQuery{At: when, Limit: regs, Namespace: "webhook", Owner: fmt.Sprintf("o%d", i),
			LeaseUntil: when.Add(time.Minute)})
		require.NoError(t, err)
		require.Len(t, due.Registrations, regs)
		saves := make([]push.CursorSave, regs)
		for j, st := range due.Registrations {
			saves[j] = push.CursorSave{Claim: st.Claim(), NextSeq: st.NextSeq + 1}
		}
		errs, err := s.AdvanceBatch(ctx, saves)
		require.NoError(t, err)
		require.Equal(t, make([]error, regs), errs)
	}
	var mode string
	require.NoError(t, s.Pool().QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode))
	require.Equal(t, "auto", mode, "the batch's setting outlived its transaction")
	type plans struct {
		Statement       string
		Generic, Custom int64
	}
	rows, err := s.Pool().Query(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
WHERE statement IN ($1, $2)`, postgres.SQLFenceBatch, postgres.SQLAdvanceBatch)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[plans])
	require.NoError(t, err)
	require.Len(t, got, 2, "both statements ran as prepared statements on the connection")
	for _, p := range got {
		require.Zero(t, p.Custom, "planned anew for a call: %.60s", p.Statement)
		require.EqualValues(t, batches, p.Generic, "%.60s", p.Statement)
	}
}

// TestDuePlansOnce: Due's statements run on their generic plans: the
// statement that clears the pending markers of streams nobody lags on,
// whose custom plans PostgreSQL kept choosing, is planned once per
// connection, and the setting ends with Due's transaction.
func TestDuePlansOnce(t *testing.T) {
	ctx := t.Context()
	s := oneConnStore(t)
	const claims = 8
	_, err := s.Register(ctx, push.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: "https://receiver.example/"})
	require.NoError(t, err)
	for i := range claims {
		// An append marks the stream pending; the claim serves it, and the
		// next one finds it idle and clears its marker.
		_, err := s.Append(ctx, "s", entry(fmt.Sprintf("e%d", i)))
		require.NoError(t, err)
		for j := range 2 {
			when := at(240*i + 120*j)
			due, err := s.Due(ctx, push.DueQuery{At: when, Limit: 1, Namespace: "webhook", Owner: fmt.Sprintf("o%d-%d", i, j),
				LeaseUntil: when.Add(time.Minute)})
			require.NoError(t, err)
			for _, st := range due.Registrations {
				require.NoError(t, s.Advance(ctx, st.Claim(), st.Head+1))
			}
		}
	}
	var mode string
	require.NoError(t, s.Pool().QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode))
	require.Equal(t, "auto", mode, "Due's setting outlived its transaction")
	var generic, custom int64
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`,
		postgres.SQLClearPending).Scan(&generic, &custom))
	require.Zero(t, custom, "the markers' statement was planned anew for a call")
	require.GreaterOrEqual(t, generic, int64(claims))
}

// oneConnStore is a Store on a migrated database whose pool has one
// connection, so that every statement's plan counts are on it.
func oneConnStore(t *testing.T) *postgres.Store {
	t.Helper()
	url := migratedURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return openStore(t, url+sep+"pool_max_conns=1")
}
