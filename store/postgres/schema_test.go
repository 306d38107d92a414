package postgres_test

import (
	"context"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// emptyDatabase returns the URL of a fresh database without herald's schema
// and a pool on it for the test's own looks.
func emptyDatabase(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	pool, err := postgres.NewPool(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return url, pool
}

func tables(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

// TestOpenRefusesAnEmptyDatabase: opening a database without herald's
// schema fails with ErrSchemaBehind and creates nothing; so does asking for
// its status.
func TestOpenRefusesAnEmptyDatabase(t *testing.T) {
	url, pool := emptyDatabase(t)
	_, err := postgres.New(t.Context(), pool)
	require.ErrorIs(t, err, store.ErrSchemaBehind)
	require.Contains(t, err.Error(), "herald migrate up")
	require.Empty(t, tables(t, pool), "opening changed nothing")

	st, err := postgres.MigrationStatus(t.Context(), url)
	require.NoError(t, err)
	require.Zero(t, st.Current)
	require.Equal(t, postgres.SchemaVersion(), st.Latest)
	require.True(t, st.Pending())
	require.NotEmpty(t, st.Database)
	require.Len(t, st.Migrations, postgres.SchemaVersion())
	for _, m := range st.Migrations {
		require.False(t, m.Applied)
	}
	require.Empty(t, tables(t, pool), "status changed nothing")
}

// TestMigrationsAreReversible: up applies every migration, up again changes
// nothing, down reverts one step at a time (version 1 drops every herald
// table), down at version 0 is left alone, up again restores the schema;
// New accepts only the current version.
func TestMigrationsAreReversible(t *testing.T) {
	ctx := t.Context()
	url, pool := emptyDatabase(t)
	st, err := postgres.MigrateUp(ctx, url)
	require.NoError(t, err)
	require.Equal(t, postgres.SchemaVersion(), st.Current)
	require.False(t, st.Pending())
	require.False(t, st.Dirty)
	require.Equal(t, "init", st.Migrations[0].Name)
	for _, m := range st.Migrations {
		require.True(t, m.Applied, m.Name)
	}
	require.Equal(t, []string{"herald_actor_key", "herald_evidence", "herald_host", "herald_record", "herald_registration", "herald_resend", "herald_schema_migrations", "herald_seq", "herald_sequencer", "herald_stream", "herald_subscription", "herald_token"}, tables(t, pool))

	again, err := postgres.MigrateUp(ctx, url)
	require.NoError(t, err)
	require.Equal(t, st, again, "up on a current schema changes nothing")

	s, err := postgres.New(ctx, pool)
	require.NoError(t, err)
	_, err = s.Append(ctx, "s", entry("a"))
	require.NoError(t, err)
	s.Close()

	for v := postgres.SchemaVersion(); v >= 1; v-- {
		down, err := postgres.MigrateDown(ctx, url)
		require.NoError(t, err)
		require.Equal(t, v-1, down.Current)
		require.False(t, down.Migrations[v-1].Applied)
	}
	require.Equal(t, []string{"herald_schema_migrations"}, tables(t, pool), "down removed every herald table")
	zero, err := postgres.MigrateDown(ctx, url)
	require.NoError(t, err)
	require.Zero(t, zero.Current, "version 0 is left alone")
	_, err = postgres.New(ctx, pool)
	require.ErrorIs(t, err, store.ErrSchemaBehind)

	_, err = postgres.MigrateUp(ctx, url)
	require.NoError(t, err)
	_, err = postgres.New(ctx, pool)
	require.NoError(t, err)
}

// TestConcurrentMigrateUp: several `herald migrate up` at once apply each
// migration once. The test holds the migration lock until every one of
// them waits for it, so that they do run at once; a migration applied twice
// would fail (CREATE TABLE of a table that exists).
func TestConcurrentMigrateUp(t *testing.T) {
	const runs = 3
	ctx := t.Context()
	url, pool := emptyDatabase(t)
	holder := holdMigrationLock(t, url)

	var wg sync.WaitGroup
	results := make([]store.SchemaStatus, runs)
	errs := make([]error, runs)
	for i := range runs {
		wg.Go(func() { results[i], errs[i] = postgres.MigrateUp(context.Background(), url) })
	}
	for deadline := time.Now().Add(time.Minute); ; {
		require.True(t, time.Now().Before(deadline), "the migrations never waited for the advisory lock")
		var waiting int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&waiting))
		if waiting == runs {
			break
		}
	}
	releaseMigrationLock(t, holder)
	wg.Wait()
	var err error
	for i := range runs {
		require.NoError(t, errs[i], "run %d", i)
		require.Equal(t, postgres.SchemaVersion(), results[i].Current)
		require.False(t, results[i].Dirty)
	}
	_, err = postgres.New(ctx, pool)
	require.NoError(t, err)
}

// TestMigrateGivesUpWaitingForTheLock: while another process holds the
// migration lock, MigrateUp waits until ctx's deadline (PostgreSQL's
// lock_timeout), then fails saying why, having changed nothing and left no
// connection waiting; once the lock is free, it migrates.
func TestMigrateGivesUpWaitingForTheLock(t *testing.T) {
	ctx := t.Context()
	url, pool := emptyDatabase(t)
	holder := holdMigrationLock(t, url)

	// The garbage collector would close a leaked connection's socket,
	// hiding the leak: no collection until the check below is done.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := postgres.MigrateUp(short, url)
	require.ErrorContains(t, err, "lock")
	requireNoPgxTypes(t, err)
	require.Empty(t, tables(t, pool), "nothing changed")
	// The server ends a backend once it reads its client's goodbye: poll.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var left int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> $1 AND query = $2`,
			holder.PgConn().PID(), postgres.SQLMigrationLock).Scan(&left))
		if left == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "a connection that asked for the lock is left open")
	}

	releaseMigrationLock(t, holder)
	st, err := postgres.MigrateUp(ctx, url)
	require.NoError(t, err)
	require.Equal(t, postgres.SchemaVersion(), st.Current)
}

// holdMigrationLock takes, on a connection of its own, the migration lock
// of the database at url, as another `herald migrate` would hold it (this
// one for its session, that one for its transaction: the two conflict).
func holdMigrationLock(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx := t.Context()
	holder, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close(context.Background()) })
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(`+postgres.MigrationLockKey+`)`)
	require.NoError(t, err)
	return holder
}

func releaseMigrationLock(t *testing.T, holder *pgx.Conn) {
	t.Helper()
	var released bool
	require.NoError(t, holder.QueryRow(t.Context(), `SELECT pg_advisory_unlock(`+postgres.MigrationLockKey+`)`).Scan(&released))
	require.True(t, released)
}

// requireRefused checks that opening and migrating the database, either
// way, fail with want.
func requireRefused(t *testing.T, pool *pgxpool.Pool, url string, want error) {
	t.Helper()
	_, err := postgres.New(t.Context(), pool)
	require.ErrorIs(t, err, want)
	_, err = postgres.MigrateDown(t.Context(), url)
	require.ErrorIs(t, err, want)
	_, err = postgres.MigrateUp(t.Context(), url)
	require.ErrorIs(t, err, want)
}

// TestOpenRefusesANewerSchema: a database migrated by a newer herald is
// refused, and never migrated down; its status is reported.
func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	url := pool.Config().ConnString()
	_, err := pool.Exec(ctx, `UPDATE herald_schema_migrations SET version = $1`, postgres.SchemaVersion()+1)
	require.NoError(t, err)
	requireRefused(t, pool, url, store.ErrSchemaAhead)
	st, err := postgres.MigrationStatus(ctx, url)
	require.NoError(t, err)
	require.Equal(t, postgres.SchemaVersion()+1, st.Current)
	require.Contains(t, tables(t, pool), "herald_stream", "nothing was migrated down")
}

// TestAFailedMigrationChangesNothing: a migration the server refuses (here
// an index in the way of version 1's second statement) is rolled back whole
// with its version row: the database stays at version 0, clean, and the
// error says which migration failed, with the server's message.
func TestAFailedMigrationChangesNothing(t *testing.T) {
	ctx := t.Context()
	url, pool := emptyDatabase(t)
	_, err := pool.Exec(ctx, `CREATE TABLE obstacle (x int); CREATE INDEX herald_stream_pending ON obstacle (x)`)
	require.NoError(t, err)

	_, err = postgres.MigrateUp(ctx, url)
	var pe *postgres.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "42P07", pe.SQLState, "duplicate_table: %v", err)
	require.ErrorContains(t, err, "postgres: migrate up, migration 001_init up: ")
	requireNoPgxTypes(t, err)
	require.Equal(t, []string{"obstacle"}, tables(t, pool), "the failed migration was rolled back whole, version table too")

	st, err := postgres.MigrationStatus(ctx, url)
	require.NoError(t, err)
	require.False(t, st.Dirty)
	require.Zero(t, st.Current)

	_, err = pool.Exec(ctx, `DROP TABLE obstacle`)
	require.NoError(t, err)
	st, err = postgres.MigrateUp(ctx, url)
	require.NoError(t, err)
	require.Equal(t, postgres.SchemaVersion(), st.Current)
}

// TestOpenRefusesAnotherApplicationsTables: a version table that is not
// of herald's shape, or herald's table names without a version table,
// are not a herald database; nothing is changed.
func TestOpenRefusesAnotherApplicationsTables(t *testing.T) {
	ctx := t.Context()
	for name, ddl := range map[string]string{
		"foreign version table":   `CREATE TABLE herald_schema_migrations (release text)`,
		"herald names, no schema": `CREATE TABLE herald_record (anything int)`,
	} {
		t.Run(name, func(t *testing.T) {
			url, pool := emptyDatabase(t)
			_, err := pool.Exec(ctx, ddl)
			require.NoError(t, err)
			before := tables(t, pool)
			requireRefused(t, pool, url, store.ErrNotHerald)
			_, err = postgres.MigrationStatus(ctx, url)
			require.ErrorIs(t, err, store.ErrNotHerald)
			require.Equal(t, before, tables(t, pool), "nothing changed")
		})
	}
}

// TestOtherApplicationsTablesAreFine: herald shares the application's
// database (that is what AppendTx is for), including an application that
// keeps its own golang-migrate version in the default table.
func TestOtherApplicationsTablesAreFine(t *testing.T) {
	ctx := t.Context()
	url, pool := emptyDatabase(t)
	_, err := pool.Exec(ctx, `CREATE TABLE orders (id int PRIMARY KEY);
		CREATE TABLE schema_migrations (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL);
		INSERT INTO schema_migrations VALUES (42, false)`)
	require.NoError(t, err)
	_, err = postgres.MigrateUp(ctx, url)
	require.NoError(t, err)
	_, err = postgres.New(ctx, pool)
	require.NoError(t, err)
	var theirs int
	require.NoError(t, pool.QueryRow(ctx, `SELECT version FROM schema_migrations`).Scan(&theirs))
	require.Equal(t, 42, theirs, "the application's version is its own")
}
