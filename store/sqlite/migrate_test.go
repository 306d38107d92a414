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

// oldRunnerFile builds, with plain SQL, a database as herald's own runner
// left it before golang-migrate: WAL mode, herald's application id, the
// version in PRAGMA user_version, the up migrations 1..version applied, no
// schema_migrations table; and one record in stream "s".
func oldRunnerFile(t *testing.T, path string, version int) {
	t.Helper()
	stmts := []string{"PRAGMA journal_mode = WAL"}
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
		fmt.Sprintf("PRAGMA user_version = %d", version),
		"INSERT INTO herald_stream (stream, head, sealed) VALUES ('s', 1, 0)",
		`INSERT INTO herald_record (stream, seq, id, kind, content_type, payload, final, appended_at, digest)
		 VALUES ('s', 1, 'old', 'k', 'application/json', CAST('{"old":true}' AS BLOB), 0, 1, x'00')`)
	rawExec(t, path, stmts...)
}

// rawState reads what golang-migrate and the header say, with a plain
// driver connection.
func rawState(t *testing.T, path string) (version int, dirty bool, userVersion int) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.QueryRow("SELECT version, dirty FROM schema_migrations").Scan(&version, &dirty))
	require.NoError(t, db.QueryRow("PRAGMA user_version").Scan(&userVersion))
	return version, dirty, userVersion
}

// TestOpenAdoptsADatabaseOfTheOldRunner: a file of herald before
// golang-migrate, at any version, is reported as it is without being
// changed, then opened: its version is recorded in schema_migrations, it is
// migrated up, its records are kept, and user_version is set above what any
// older binary knows (so that one refuses it as newer).
func TestOpenAdoptsADatabaseOfTheOldRunner(t *testing.T) {
	ctx := context.Background()
	latest := sqlite.SchemaVersion()
	for version := 1; version <= latest; version++ {
		t.Run(fmt.Sprintf("at version %d", version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "herald.db")
			oldRunnerFile(t, path, version)
			before := snap(t, path)
			st, err := sqlite.MigrationStatus(ctx, path)
			require.NoError(t, err)
			require.Equal(t, version, st.Current)
			require.Equal(t, version < latest, st.Pending())
			requireUnchanged(t, before, path, "MigrationStatus of an old runner's file")

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

			v, dirty, userVersion := rawState(t, path)
			require.Equal(t, latest, v)
			require.False(t, dirty)
			require.Greater(t, userVersion, latest, "an older binary reads user_version and refuses the file as newer")
			st, err = sqlite.MigrationStatus(ctx, path)
			require.NoError(t, err)
			require.Equal(t, latest, st.Current)
		})
	}
}

// TestMigrateDownAdoptsFirst: a step down on an old runner's file records
// its version, then reverts one migration from there.
func TestMigrateDownAdoptsFirst(t *testing.T) {
	ctx := context.Background()
	latest := sqlite.SchemaVersion()
	path := filepath.Join(t.TempDir(), "herald.db")
	oldRunnerFile(t, path, latest)
	st, err := sqlite.MigrateDown(ctx, path)
	require.NoError(t, err)
	require.Equal(t, latest-1, st.Current)
	v, dirty, _ := rawState(t, path)
	require.Equal(t, latest-1, v)
	require.False(t, dirty)
}

// TestAFailedMigrationIsDirtyAndSettledAsTheErrorSays: a migration that
// fails (here, because a column it adds is already there) leaves the
// version dirty; every call then refuses the file with ErrSchemaDirty and
// says how to settle it, and doing what it says lets the migration run.
func TestAFailedMigrationIsDirtyAndSettledAsTheErrorSays(t *testing.T) {
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
	require.ErrorIs(t, err, sqlite.ErrSchemaDirty)
	require.ErrorContains(t, err, "duplicate column name: wake_at", "the driver's message is kept")
	require.NotContains(t, err.Error(), "CREATE TABLE", "the migration's SQL is not repeated")
	var driverErr *modernc.Error
	require.False(t, errors.As(err, &driverErr), "no driver type in the chain")
	require.ErrorContains(t, err, "version 2 dirty")

	before := snap(t, path)
	st, err := sqlite.MigrationStatus(ctx, path)
	require.ErrorIs(t, err, sqlite.ErrSchemaDirty)
	require.True(t, st.Dirty)
	require.Equal(t, 2, st.Current)
	_, err = sqlite.Open(ctx, path)
	require.ErrorIs(t, err, sqlite.ErrSchemaDirty)
	require.ErrorContains(t, err, path)
	requireUnchanged(t, before, path, "a dirty database")

	// The migration's transaction rolled back: the file holds version 1
	// (and the stray column, which the operator removes).
	rawExec(t, path, "ALTER TABLE herald_stream DROP COLUMN wake_at",
		"UPDATE schema_migrations SET version = 1, dirty = 0")
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	st, err = sqlite.MigrationStatus(ctx, path)
	require.NoError(t, err)
	require.Equal(t, latest, st.Current)
	require.False(t, st.Dirty)
}

// TestConcurrentMigrationsTakeTurns: stores opening and `herald migrate up`
// at once on a new file stand for processes starting together. golang-migrate
// records each migration in three transactions; the exclusive lock makes the
// others wait for the whole run, so every call succeeds and the version ends
// clean at the latest.
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
	v, dirty, _ := rawState(t, path)
	require.Equal(t, sqlite.SchemaVersion(), v)
	require.False(t, dirty)
}
