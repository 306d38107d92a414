package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
	"github.com/stretchr/testify/require"
	modernc "modernc.org/sqlite"
)

// openClose opens the store at path, migrating it, and closes it.
func openClose(t *testing.T, path string) {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// migrate runs step (sqlite.MigrateUp or MigrateDown) on path, which must
// succeed, and returns where the schema stands.
func migrate(t *testing.T, step func(context.Context, string) (store.SchemaStatus, error), path string, msgAndArgs ...any) store.SchemaStatus {
	t.Helper()
	st, err := step(t.Context(), path)
	require.NoError(t, err, msgAndArgs...)
	return st
}

// rawExec runs statements on the file at path with a plain driver connection,
// as another application (or a newer herald) would.
func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	for _, q := range stmts {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
}

// snapshot is what a refusal must leave alone: the bytes and mtime of the
// file and the names in its directory (no -wal, -shm or -journal appears).
type snapshot struct {
	data  []byte
	mtime time.Time
	names []string
}

func snap(t *testing.T, path string) snapshot {
	t.Helper()
	var s snapshot
	if fi, err := os.Stat(path); err == nil {
		s.mtime = fi.ModTime()
		if !fi.IsDir() {
			s.data, err = os.ReadFile(path)
			require.NoError(t, err)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	for _, e := range entries {
		s.names = append(s.names, e.Name())
	}
	return s
}

func requireUnchanged(t *testing.T, before snapshot, path, what string) {
	t.Helper()
	after := snap(t, path)
	require.True(t, bytes.Equal(before.data, after.data), "%s: the file's bytes changed", what)
	require.True(t, before.mtime.Equal(after.mtime), "%s: the file's mtime changed", what)
	require.Equal(t, before.names, after.names, "%s: files appeared or vanished beside it", what)
}

func TestOpenRefusesWhatIsNotHerald(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  error // nil: only a clear error naming the path
		says  string
	}{
		{"text file", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("name,email\nada,ada@example.com\n"), 0o644))
		}, store.ErrNotHerald, "not an SQLite database"},
		{"short garbage", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte{0xff, 0x00, 0x13}, 0o644))
		}, store.ErrNotHerald, "not an SQLite database"},
		{"SQLite header over garbage", func(t *testing.T, path string) {
			garbage := bytes.Repeat([]byte{0xa5}, 8192)
			copy(garbage, "SQLite format 3\x00")
			require.NoError(t, os.WriteFile(path, garbage, 0o644))
		}, store.ErrNotHerald, "not an SQLite database"},
		{"another application's database", func(t *testing.T, path string) {
			rawExec(t, path, "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)", "INSERT INTO users (email) VALUES ('ada@example.com')")
		}, store.ErrNotHerald, "another application's tables (users)"},
		{"another application's WAL database", func(t *testing.T, path string) {
			rawExec(t, path, "PRAGMA journal_mode = WAL", "CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('hi')")
		}, store.ErrNotHerald, "another application's tables (notes)"},
		{"another application's id", func(t *testing.T, path string) {
			rawExec(t, path, "PRAGMA application_id = 1234", "PRAGMA user_version = 1")
		}, store.ErrNotHerald, "application id 0x4d2"},
		{"another application's version on an empty schema", func(t *testing.T, path string) {
			rawExec(t, path, "PRAGMA user_version = 7")
		}, store.ErrNotHerald, "schema version 7 but not herald's application id"},
		{"a newer herald's database", func(t *testing.T, path string) {
			s, err := sqlite.Open(ctx, path)
			require.NoError(t, err)
			_, err = s.Append(ctx, "s", journal.Entry{ID: "a", Kind: "k", Payload: []byte(`{}`)})
			require.NoError(t, err)
			require.NoError(t, s.Close())
			rawExec(t, path, "UPDATE schema_migrations SET version = 99")
		}, store.ErrSchemaAhead, "version 99"},
		{"herald's id and tables without a version", func(t *testing.T, path string) {
			rawExec(t, path, "PRAGMA application_id = 0x48524c44", "CREATE TABLE herald_future (x)")
		}, store.ErrNotHerald, "no schema_migrations table"},
		{"a dirty database", func(t *testing.T, path string) {
			openClose(t, path)
			rawExec(t, path, "UPDATE schema_migrations SET dirty = 1")
		}, store.ErrSchemaDirty, `UPDATE schema_migrations SET version = N, dirty = false`},
		{"another application's golang-migrate database", func(t *testing.T, path string) {
			rawExec(t, path, "CREATE TABLE schema_migrations (version uint64, dirty bool)", "INSERT INTO schema_migrations VALUES (1, 0)")
		}, store.ErrNotHerald, "another application's tables (schema_migrations)"},
		{"a directory", func(t *testing.T, path string) {
			require.NoError(t, os.Mkdir(path, 0o755))
		}, nil, "is a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "herald.db")
			c.setup(t, path)
			before := snap(t, path)
			ops := map[string]func() error{
				"Open": func() error {
					s, err := sqlite.Open(ctx, path)
					if err == nil {
						s.Close()
					}
					return err
				},
				"MigrateUp":   func() error { _, err := sqlite.MigrateUp(ctx, path); return err },
				"MigrateDown": func() error { _, err := sqlite.MigrateDown(ctx, path); return err },
			}
			for op, call := range ops {
				err := call()
				require.Error(t, err, op)
				if c.want != nil {
					require.ErrorIs(t, err, c.want, op)
				}
				require.Contains(t, err.Error(), c.says, op)
				require.Contains(t, err.Error(), path, "%s: the error names the file", op)
				requireUnchanged(t, before, path, op)
			}
		})
	}
}

func TestOpenRefusesWhatCannotBeOpened(t *testing.T) {
	ctx := context.Background()
	missingDir := filepath.Join(t.TempDir(), "no-such-dir", "herald.db")
	_, err := sqlite.Open(ctx, missingDir)
	require.Error(t, err)
	require.Contains(t, err.Error(), missingDir)
	require.Contains(t, err.Error(), "the folder "+filepath.Dir(missingDir)+" does not exist", "not SQLite's \"unable to open database file (14)\"")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NotErrorIs(t, err, store.ErrNotHerald)
	_, statErr := os.Stat(filepath.Dir(missingDir))
	require.ErrorIs(t, statErr, os.ErrNotExist, "nothing was created")

	_, err = sqlite.Open(ctx, "")
	require.ErrorContains(t, err, "path is empty")
}

func TestMigrationStatusOfANewerSchemaReportsIt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	openClose(t, path)
	rawExec(t, path, "UPDATE schema_migrations SET version = 99")
	before := snap(t, path)
	st, err := sqlite.MigrationStatus(ctx, path)
	require.NoError(t, err)
	require.Equal(t, 99, st.Current)
	require.Equal(t, sqlite.SchemaVersion(), st.Latest)
	requireUnchanged(t, before, path, "MigrationStatus")
}

func TestOpenCreatesAndMigratesANewFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, setup := range map[string]func(path string){
		"missing": func(string) {},
		"empty":   func(path string) { require.NoError(t, os.WriteFile(path, nil, 0o644)) },
	} {
		path := filepath.Join(dir, name+".db")
		setup(path)
		s, err := sqlite.Open(ctx, path)
		require.NoError(t, err, name)
		_, err = s.Append(ctx, "s", journal.Entry{ID: "a", Kind: "k", Payload: []byte(`{}`)})
		require.NoError(t, err, name)
		require.NoError(t, s.Check(ctx))
		require.NoError(t, s.Close())
		st, err := sqlite.MigrationStatus(ctx, path)
		require.NoError(t, err)
		require.Equal(t, sqlite.SchemaVersion(), st.Current, name)
		require.False(t, st.Pending())

		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		var mode string
		require.NoError(t, db.QueryRow("PRAGMA journal_mode").Scan(&mode))
		require.NoError(t, db.Close())
		require.Equal(t, "wal", mode, "%s: the file is in WAL mode", name)
	}
}

func TestMigrateUpDownAndStatus(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	latest := sqlite.SchemaVersion()

	st, err := sqlite.MigrationStatus(ctx, path)
	require.NoError(t, err)
	require.Equal(t, 0, st.Current)
	require.Equal(t, path, st.Database, "a SQLite status names its file")
	require.Len(t, st.Migrations, latest)
	require.Equal(t, "init", st.Migrations[0].Name)
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "status does not create the file")
	_, err = sqlite.MigrateDown(ctx, path)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing to migrate down")

	st = migrate(t, sqlite.MigrateUp, path)
	require.Equal(t, latest, st.Current)
	for _, m := range st.Migrations {
		require.True(t, m.Applied, m.Name)
	}
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	_, err = s.Append(ctx, "s", journal.Entry{ID: "kept", Kind: "k", Payload: []byte(`{"x":1}`)})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	for v := latest - 1; v >= 0; v-- {
		st = migrate(t, sqlite.MigrateDown, path)
		require.Equal(t, v, st.Current)
		require.False(t, st.Migrations[v].Applied)
	}
	st, err = sqlite.MigrationStatus(ctx, path)
	require.NoError(t, err)
	require.True(t, st.Pending())
	before := snap(t, path)
	st = migrate(t, sqlite.MigrateDown, path, "at version 0 a step down does nothing")
	require.Equal(t, 0, st.Current)
	requireUnchanged(t, before, path, "MigrateDown at version 0")
	st = migrate(t, sqlite.MigrateUp, path)
	require.Equal(t, latest, st.Current)
	before = snap(t, path)
	st = migrate(t, sqlite.MigrateUp, path)
	require.Equal(t, latest, st.Current)
	requireUnchanged(t, before, path, "MigrateUp at the latest version")

	// Fully reverted, the file is a herald database at version 0: Open
	// takes it, and the journal went with the tables.
	migrate(t, sqlite.MigrateDown, path)
	s, err = sqlite.Open(ctx, path)
	require.NoError(t, err)
	_, err = s.Lookup(ctx, "kept")
	require.ErrorIs(t, err, journal.ErrNotFound)
	require.NoError(t, s.Close())
}

func TestErrorsCarryNoDriverType(t *testing.T) {
	ctx := context.Background()
	s := sqlite.OpenTemp(t)
	require.NoError(t, s.Close())
	_, err := s.Head(ctx, "s")
	require.Error(t, err, "a closed store fails")
	for e := err; e != nil; e = errors.Unwrap(e) {
		require.False(t, strings.HasPrefix(typeName(e), "*sqlite."), "driver type %s leaked", typeName(e))
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a dir#1?x=%20")
	require.NoError(t, os.Mkdir(dir, 0o755))
	path := filepath.Join(dir, "her ald?.db")
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	_, err = s.Append(ctx, "s", journal.Entry{ID: "a", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Equal(t, "her ald?.db", entries[0].Name(), "the file is where the path says")
	s, err = sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	head, err := s.Head(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, uint64(1), head)
}

// WithoutMigrating creates nothing and migrates nothing: a missing file is
// fs.ErrNotExist, a schema behind is store.ErrSchemaBehind, the file is left
// as it was; a current one opens.
func TestOpenWithoutMigrating(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	_, err := sqlite.Open(ctx, path, sqlite.WithoutMigrating())
	require.ErrorIs(t, err, os.ErrNotExist)
	_, statErr := os.Stat(path)
	require.ErrorIs(t, statErr, os.ErrNotExist, "nothing was created")

	migrate(t, sqlite.MigrateUp, path)
	s, err := sqlite.Open(ctx, path, sqlite.WithoutMigrating())
	require.NoError(t, err)
	require.NoError(t, s.Close())

	migrate(t, sqlite.MigrateDown, path)
	before := snap(t, path)
	_, err = sqlite.Open(ctx, path, sqlite.WithoutMigrating())
	require.ErrorIs(t, err, store.ErrSchemaBehind)
	requireUnchanged(t, before, path, "Open WithoutMigrating on a schema behind")
	st, err := sqlite.MigrationStatus(ctx, path)
	require.NoError(t, err)
	require.True(t, st.Pending(), "still behind")
}

// requireLatestClean reads schema_migrations with a plain driver connection:
// the latest version, not dirty.
func requireLatestClean(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var (
		version int
		dirty   bool
	)
	require.NoError(t, db.QueryRow("SELECT version, dirty FROM schema_migrations").Scan(&version, &dirty))
	require.Equal(t, sqlite.SchemaVersion(), version)
	require.False(t, dirty)
}

// TestADirtyVersionIsSettledAsTheErrorSays: a version marked dirty (a
// migration began and did not finish) is refused by every call, changing
// nothing; doing what the error says lets herald carry on.
func TestADirtyVersionIsSettledAsTheErrorSays(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	migrate(t, sqlite.MigrateUp, path)
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
	openClose(t, path)
	requireLatestClean(t, path)
}

// TestAFailedMigrationChangesNothing: a migration that fails (here, because
// a table it creates is already there) rolls back with its version row: the
// file stays at the version before, clean, and the error keeps the driver's
// message without its type or the migration's SQL.
func TestAFailedMigrationChangesNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	migrate(t, sqlite.MigrateUp, path)
	migrate(t, sqlite.MigrateDown, path)
	rawExec(t, path, "CREATE TABLE herald_host (x)") // what migration 001 creates last

	_, err := sqlite.MigrateUp(ctx, path)
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
	openClose(t, path)
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
	requireLatestClean(t, path)
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
	st := migrate(t, sqlite.MigrateDown, path)
	require.Equal(t, sqlite.SchemaVersion()-1, st.Current)
	st = migrate(t, sqlite.MigrateUp, path)
	require.Equal(t, sqlite.SchemaVersion(), st.Current)
	_, err = s.Append(ctx, "s", journal.Entry{ID: "a", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
}

// A file at this build's schema version whose tables are another build's
// (the schema is one migration, changed in place before a release) is
// refused by every call, naming what differs and changing nothing, where it
// used to open and fail at its first statement ("no such column"). An index
// of the operator's own is no other build's.
func TestAnotherBuildsSchemaIsRefusedNamingWhatDiffers(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, change, names string
	}{
		{"older", "ALTER TABLE herald_registration DROP COLUMN paced_until", "lacks column herald_registration.paced_until INTEGER"},
		{"newer", "ALTER TABLE herald_registration ADD COLUMN tenant TEXT", "has column herald_registration.tenant TEXT"},
	} {
		path := filepath.Join(t.TempDir(), "herald.db")
		openClose(t, path)
		rawExec(t, path, c.change)
		before := snap(t, path)
		_, err := sqlite.Open(ctx, path)
		require.ErrorIs(t, err, store.ErrSchemaOtherBuild, c.name)
		require.ErrorContains(t, err, c.names, c.name)
		_, err = sqlite.MigrateUp(ctx, path)
		require.ErrorIs(t, err, store.ErrSchemaOtherBuild, c.name)
		_, err = sqlite.MigrationStatus(ctx, path)
		require.ErrorIs(t, err, store.ErrSchemaOtherBuild, c.name)
		requireUnchanged(t, before, path, c.name)
	}
	path := filepath.Join(t.TempDir(), "herald.db")
	openClose(t, path)
	rawExec(t, path, "CREATE INDEX ops_by_url ON herald_registration (url)")
	openClose(t, path)
}
