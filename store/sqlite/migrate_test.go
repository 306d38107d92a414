package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	modernc "modernc.org/sqlite"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store/sqlite"
)

// golangMigrateFile builds, with plain SQL, a database as herald's runner
// before internal/migrate (golang-migrate) left it at version: WAL mode,
// herald's application id, user_version retired to 1000000, the up
// migrations 1..version applied, and golang-migrate's schema_migrations
// table holding (version, dirty); and one record in stream "s".
func golangMigrateFile(t *testing.T, path string, version int, dirty bool) {
	t.Helper()
	stmts := []string{"PRAGMA journal_mode = WAL", "PRAGMA auto_vacuum = INCREMENTAL"}
	files, err := filepath.Glob(filepath.Join("migrations", "*.up.sql"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), version)
	for _, f := range files[:version] {
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		stmts = append(stmts, string(body))
	}
	stmts = append(stmts,
		"PRAGMA application_id = 0x48524c44",
		"PRAGMA user_version = 1000000",
		"CREATE TABLE IF NOT EXISTS schema_migrations (version uint64,dirty bool)",
		"CREATE UNIQUE INDEX IF NOT EXISTS version_unique ON schema_migrations (version)",
		fmt.Sprintf("INSERT INTO schema_migrations (version, dirty) VALUES (%d, %v)", version, dirty),
		"INSERT INTO herald_stream (stream, head, sealed) VALUES ('s', 1, 0)",
		`INSERT INTO herald_record (stream, seq, id, kind, content_type, payload, final, appended_at, digest)
		 VALUES ('s', 1, 'old', 'k', 'application/json', CAST('{"old":true}' AS BLOB), 0, 1, x'00')`)
	rawExec(t, path, stmts...)
}

// rawState reads schema_migrations with a plain driver connection.
func rawState(t *testing.T, path string) (version int, dirty bool) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.QueryRow("SELECT version, dirty FROM schema_migrations").Scan(&version, &dirty))
	return version, dirty
}

// TestOpenCarriesOnFromGolangMigrate: a file golang-migrate migrated, at any
// version, is reported as it is without being changed, then opened: it is
// migrated up from its version and its records are kept.
func TestOpenCarriesOnFromGolangMigrate(t *testing.T) {
	ctx := context.Background()
	latest := sqlite.SchemaVersion()
	for version := 1; version <= latest; version++ {
		t.Run(fmt.Sprintf("at version %d", version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "herald.db")
			golangMigrateFile(t, path, version, false)
			before := snap(t, path)
			st, err := sqlite.MigrationStatus(ctx, path)
			require.NoError(t, err)
			require.Equal(t, version, st.Current)
			require.Equal(t, version < latest, st.Pending())
			requireUnchanged(t, before, path, "MigrationStatus of golang-migrate's file")

			s, err := sqlite.Open(ctx, path)
			require.NoError(t, err)
			recs, err := s.Read(ctx, "s", 1, 10)
			require.NoError(t, err)
			require.Len(t, recs, 1)
			require.Equal(t, `{"old":true}`, string(recs[0].Payload))
			rec, err := s.Append(ctx, "s", journal.Entry{ID: "new", Kind: "k", Payload: []byte(`{}`)})
			require.NoError(t, err)
			require.Equal(t, uint64(2), rec[0].Seq, "the head carried over")
			require.NoError(t, s.Check(ctx))
			require.NoError(t, s.Close())

			v, dirty := rawState(t, path)
			require.Equal(t, latest, v)
			require.False(t, dirty)
		})
	}
}

// TestMigrateDownFromGolangMigrate: a step down on golang-migrate's file
// reverts one migration from its version.
func TestMigrateDownFromGolangMigrate(t *testing.T) {
	ctx := context.Background()
	latest := sqlite.SchemaVersion()
	path := filepath.Join(t.TempDir(), "herald.db")
	golangMigrateFile(t, path, latest, false)
	st, err := sqlite.MigrateDown(ctx, path)
	require.NoError(t, err)
	require.Equal(t, latest-1, st.Current)
	v, dirty := rawState(t, path)
	require.Equal(t, latest-1, v)
	require.False(t, dirty)
}

// TestADirtyVersionIsSettledAsTheErrorSays: golang-migrate left a version
// dirty (it recorded a migration in three transactions). Every call refuses
// the file with ErrSchemaDirty, changing nothing, and doing what the error
// says lets herald carry on.
func TestADirtyVersionIsSettledAsTheErrorSays(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	golangMigrateFile(t, path, 2, true) // the migration to 2 failed: the file holds version 1 and 2's tables are not there…
	before := snap(t, path)
	st, err := sqlite.MigrationStatus(ctx, path)
	require.ErrorIs(t, err, sqlite.ErrSchemaDirty)
	require.True(t, st.Dirty)
	require.Equal(t, 2, st.Current)
	for op, call := range map[string]func() error{
		"Open":        func() error { _, err := sqlite.Open(ctx, path); return err },
		"MigrateUp":   func() error { _, err := sqlite.MigrateUp(ctx, path); return err },
		"MigrateDown": func() error { _, err := sqlite.MigrateDown(ctx, path); return err },
	} {
		err := call()
		require.ErrorIs(t, err, sqlite.ErrSchemaDirty, op)
		require.ErrorContains(t, err, path, op)
		require.ErrorContains(t, err, "schema_migrations records version 2 (002_push) as dirty", op)
		require.ErrorContains(t, err, "UPDATE schema_migrations SET version = N, dirty = false", op)
	}
	requireUnchanged(t, before, path, "a dirty database")

	// …but here it did finish: the operator records version 2.
	rawExec(t, path, "UPDATE schema_migrations SET version = 2, dirty = false")
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	v, dirty := rawState(t, path)
	require.Equal(t, sqlite.SchemaVersion(), v)
	require.False(t, dirty)
}

// TestAFailedMigrationChangesNothing: a migration that fails (here, because
// a column it adds is already there) rolls back with its version row: the
// file stays at the version before, clean, and the error keeps the driver's
// message without its type or the migration's SQL.
func TestAFailedMigrationChangesNothing(t *testing.T) {
	ctx := context.Background()
	latest := sqlite.SchemaVersion()
	path := filepath.Join(t.TempDir(), "herald.db")
	_, err := sqlite.MigrateUp(ctx, path)
	require.NoError(t, err)
	for v := latest; v > 1; v-- {
		_, err = sqlite.MigrateDown(ctx, path)
		require.NoError(t, err)
	}
	rawExec(t, path, "ALTER TABLE herald_stream ADD COLUMN wake_at INTEGER") // what migration 002 adds

	_, err = sqlite.MigrateUp(ctx, path)
	require.ErrorContains(t, err, "migration 002_push up: ")
	require.ErrorContains(t, err, "duplicate column name: wake_at", "the driver's message is kept")
	require.ErrorContains(t, err, path)
	require.NotContains(t, err.Error(), "CREATE TABLE", "the migration's SQL is not repeated")
	var driverErr *modernc.Error
	require.False(t, errors.As(err, &driverErr), "no driver type in the chain")
	v, dirty := rawState(t, path)
	require.Equal(t, 1, v, "the failed migration's version was not recorded")
	require.False(t, dirty)
	_, err = sqlite.Open(ctx, path)
	require.ErrorContains(t, err, "duplicate column name: wake_at")

	rawExec(t, path, "ALTER TABLE herald_stream DROP COLUMN wake_at")
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	st, err := sqlite.MigrationStatus(ctx, path)
	require.NoError(t, err)
	require.Equal(t, latest, st.Current)
}

// TestConcurrentMigrationsTakeTurns: stores opening and `herald migrate up`
// at once on a new file stand for processes starting together. Each
// migration takes the write lock (BEGIN IMMEDIATE) and reads the version
// under it, so every call succeeds, each migration is applied once, and the
// version ends at the latest.
func TestConcurrentMigrationsTakeTurns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	errs := make(chan error, 6)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_, err := sqlite.MigrateUp(ctx, path)
			errs <- err
		})
		wg.Go(func() {
			s, err := sqlite.Open(ctx, path)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	v, dirty := rawState(t, path)
	require.Equal(t, sqlite.SchemaVersion(), v)
	require.False(t, dirty)
}

// TestMigrateBesideAnOpenStore: a migration needs only the write lock, not
// the file to itself: stepping down and up while a store has the file open
// works, and the open store's next write sees the schema it was opened on.
func TestMigrateBesideAnOpenStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	st, err := sqlite.MigrateDown(ctx, path)
	require.NoError(t, err)
	require.Equal(t, sqlite.SchemaVersion()-1, st.Current)
	st, err = sqlite.MigrateUp(ctx, path)
	require.NoError(t, err)
	require.Equal(t, sqlite.SchemaVersion(), st.Current)
	_, err = s.Append(ctx, "s", journal.Entry{ID: "a", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
}
