package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// emptyPool returns a pool on a fresh database without herald's schema.
func emptyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := postgres.NewPool(t.Context(), pgtest.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func tables(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		out = append(out, name)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestOpenRefusesAnEmptyDatabase: opening a database without herald's
// schema fails with ErrSchemaBehind and creates nothing.
func TestOpenRefusesAnEmptyDatabase(t *testing.T) {
	pool := emptyPool(t)
	_, err := postgres.New(t.Context(), pool)
	require.ErrorIs(t, err, store.ErrSchemaBehind)
	require.Contains(t, err.Error(), "herald migrate up")
	require.Empty(t, tables(t, pool), "opening changed nothing")

	status, err := postgres.MigrationStatus(t.Context(), pool)
	require.NoError(t, err)
	require.NotEmpty(t, status)
	for _, m := range status {
		require.False(t, m.Applied)
	}
	require.Empty(t, tables(t, pool), "status changed nothing")
}

// TestMigrationsAreReversible: up applies every migration and records when,
// down rolls back one step (dropping the tables of version 1), up again
// restores them; Open accepts only the current version.
func TestMigrationsAreReversible(t *testing.T) {
	ctx := t.Context()
	pool := emptyPool(t)
	applied, err := postgres.MigrateUp(ctx, pool)
	require.NoError(t, err)
	require.Len(t, applied, int(postgres.SchemaVersion()))
	require.Equal(t, "001_init", applied[0].Name)
	require.Subset(t, tables(t, pool), []string{"herald_evidence", "herald_record", "herald_registration", "herald_schema_version", "herald_stream"})

	again, err := postgres.MigrateUp(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, again, "up on a current schema applies nothing")

	status, err := postgres.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	for _, m := range status {
		require.True(t, m.Applied, m.Name)
		require.False(t, m.AppliedAt.IsZero(), m.Name)
	}
	s, err := postgres.New(ctx, pool)
	require.NoError(t, err)
	_, err = s.Append(ctx, "s", entry("a"))
	require.NoError(t, err)
	s.Close()

	for v := postgres.SchemaVersion(); v >= 1; v-- {
		down, err := postgres.MigrateDown(ctx, pool)
		require.NoError(t, err)
		require.Equal(t, v, down.Version)
	}
	require.Equal(t, []string{"herald_schema_version"}, tables(t, pool), "down removed every herald table")
	_, err = postgres.MigrateDown(ctx, pool)
	require.ErrorIs(t, err, postgres.ErrNothingToMigrate)
	_, err = postgres.New(ctx, pool)
	require.ErrorIs(t, err, store.ErrSchemaBehind)

	_, err = postgres.MigrateUp(ctx, pool)
	require.NoError(t, err)
	_, err = postgres.New(ctx, pool)
	require.NoError(t, err)
}

// TestConcurrentMigrateUp: two `herald migrate up` at once apply each
// migration once (goose's advisory lock).
func TestConcurrentMigrateUp(t *testing.T) {
	url := pgtest.NewDatabase(t)
	var wg sync.WaitGroup
	applied := make([][]postgres.Migration, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			pool, err := postgres.NewPool(context.Background(), url)
			if err != nil {
				errs[i] = err
				return
			}
			defer pool.Close()
			applied[i], errs[i] = postgres.MigrateUp(context.Background(), pool)
		})
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, int(postgres.SchemaVersion()), len(applied[0])+len(applied[1]), "each migration applied once")
}

// TestOpenRefusesANewerSchema: a database migrated by a newer herald is
// refused, and never migrated down.
func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	_, err := pool.Exec(ctx, `INSERT INTO herald_schema_version (version_id, is_applied) VALUES ($1, true)`, postgres.SchemaVersion()+1)
	require.NoError(t, err)
	_, err = postgres.New(ctx, pool)
	require.ErrorIs(t, err, store.ErrSchemaAhead)
	_, err = postgres.MigrateDown(ctx, pool)
	require.ErrorIs(t, err, store.ErrSchemaAhead)
	_, err = postgres.MigrateUp(ctx, pool)
	require.ErrorIs(t, err, store.ErrSchemaAhead)
}

// TestOpenRefusesAnotherApplicationsTables: a version table that is not
// goose's, or herald's table names without a version table, are not a
// herald database; nothing is changed.
func TestOpenRefusesAnotherApplicationsTables(t *testing.T) {
	ctx := t.Context()
	for name, ddl := range map[string]string{
		"foreign version table":   `CREATE TABLE herald_schema_version (release text)`,
		"herald names, no schema": `CREATE TABLE herald_record (anything int)`,
	} {
		t.Run(name, func(t *testing.T) {
			pool := emptyPool(t)
			_, err := pool.Exec(ctx, ddl)
			require.NoError(t, err)
			before := tables(t, pool)
			_, err = postgres.New(ctx, pool)
			require.ErrorIs(t, err, store.ErrNotHerald)
			_, err = postgres.MigrateUp(ctx, pool)
			require.ErrorIs(t, err, store.ErrNotHerald)
			require.Equal(t, before, tables(t, pool), "nothing changed")
		})
	}
}

// TestOtherApplicationsTablesAreFine: herald shares the application's
// database (that is what AppendTx is for).
func TestOtherApplicationsTablesAreFine(t *testing.T) {
	ctx := t.Context()
	pool := emptyPool(t)
	_, err := pool.Exec(ctx, `CREATE TABLE orders (id int PRIMARY KEY); CREATE TABLE goose_db_version (x int)`)
	require.NoError(t, err)
	_, err = postgres.MigrateUp(ctx, pool)
	require.NoError(t, err)
	_, err = postgres.New(ctx, pool)
	require.NoError(t, err)
}
