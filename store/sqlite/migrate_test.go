package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	modernc "modernc.org/sqlite"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
)

// rawState reads schema_migrations with a plain driver connection.
func rawState(t *testing.T, path string) (version int, dirty bool) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.QueryRow("SELECT version, dirty FROM schema_migrations").Scan(&version, &dirty))
	return version, dirty
}

// TestADirtyVersionIsSettledAsTheErrorSays: a version marked dirty (a
// migration began and did not finish) is refused by every call, changing
// nothing; doing what the error says lets herald carry on.
func TestADirtyVersionIsSettledAsTheErrorSays(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	_, err := sqlite.MigrateUp(ctx, path)
	require.NoError(t, err)
	rawExec(t, path, "UPDATE schema_migrations SET dirty = 1")
	before := snap(t, path)
	st, err := sqlite.MigrationStatus(ctx, path)
	require.ErrorIs(t, err, store.ErrSchemaDirty)
	require.True(t, st.Dirty)
	require.Equal(t, 1, st.Current)
	for op, call := range map[string]func() error{
		"Open":        func() error { _, err := sqlite.Open(ctx, path); return err },
		"MigrateUp":   func() error { _, err := sqlite.MigrateUp(ctx, path); return err },
		"MigrateDown": func() error { _, err := sqlite.MigrateDown(ctx, path); return err },
	} {
		err := call()
		require.ErrorIs(t, err, store.ErrSchemaDirty, op)
		require.ErrorContains(t, err, path, op)
		require.ErrorContains(t, err, "schema_migrations records version 1 (001_init) as dirty", op)
		require.ErrorContains(t, err, "UPDATE schema_migrations SET version = N, dirty = false", op)
	}
	requireUnchanged(t, before, path, "a dirty database")

	// The migration did finish: the operator records version 1.
	rawExec(t, path, "UPDATE schema_migrations SET version = 1, dirty = false")
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	v, dirty := rawState(t, path)
	require.Equal(t, sqlite.SchemaVersion(), v)
	require.False(t, dirty)
}

// TestAFailedMigrationChangesNothing: a migration that fails (here, because
// a table it creates is already there) rolls back with its version row: the
// file stays at the version before, clean, and the error keeps the driver's
// message without its type or the migration's SQL.
func TestAFailedMigrationChangesNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	_, err := sqlite.MigrateUp(ctx, path)
	require.NoError(t, err)
	_, err = sqlite.MigrateDown(ctx, path)
	require.NoError(t, err)
	rawExec(t, path, "CREATE TABLE herald_host (x)") // what migration 001 creates last

	_, err = sqlite.MigrateUp(ctx, path)
	require.ErrorContains(t, err, "migration 001_init up: ")
	require.ErrorContains(t, err, "table herald_host already exists", "the driver's message is kept")
	require.ErrorContains(t, err, path)
	require.NotContains(t, err.Error(), "CREATE TABLE", "the migration's SQL is not repeated")
	var driverErr *modernc.Error
	require.False(t, errors.As(err, &driverErr), "no driver type in the chain")
	st, err := sqlite.MigrationStatus(ctx, path)
	require.NoError(t, err)
	require.Zero(t, st.Current, "the failed migration's version was not recorded")
	require.False(t, st.Dirty)
	_, err = sqlite.Open(ctx, path)
	require.ErrorContains(t, err, "table herald_host already exists")

	rawExec(t, path, "DROP TABLE herald_host")
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	st, err = sqlite.MigrationStatus(ctx, path)
	require.NoError(t, err)
	require.Equal(t, sqlite.SchemaVersion(), st.Current)
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
