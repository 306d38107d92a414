package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/heraldpush/herald/store"
)

// Migrations are run by golang-migrate (github.com/golang-migrate/migrate/v4),
// the library store/postgres runs too, over the same file layout: its iofs
// source reads the embedded files, and its SQLite driver (database/sqlite,
// on modernc.org/sqlite: no cgo; it registers no database/sql driver of its
// own, only the import of modernc.org/sqlite this package makes anyway) runs
// them on a *sql.DB we open. golang-migrate keeps the version in
// schema_migrations (one row: version, dirty).
//
// What golang-migrate does not decide, herald does before calling it:
//
//   - Whose file it is. PRAGMA application_id marks a herald database; a file
//     without the mark must be empty (a new database), or it is refused.
//   - Whose version it is. herald before golang-migrate kept the version in
//     PRAGMA user_version and had no schema_migrations table; such a file is
//     adopted (its version recorded in schema_migrations) before anything
//     else runs. Then user_version is set to retiredUserVersion, which those
//     older binaries read as a newer schema and refuse.
//   - Newer and dirty versions are refused before golang-migrate is called.
//   - Another process. golang-migrate's SQLite lock holds within one process,
//     and it records a migration in three transactions (dirty, the SQL,
//     clean). herald migrates on one connection in exclusive locking mode, so
//     that no other process reads or writes the file until it is done.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// applicationID is herald's mark in the SQLite header (PRAGMA
// application_id): the bytes "HRLD".
const applicationID = 0x48524c44

// migrationsTable is golang-migrate's version table (its default name, as in
// store/postgres).
const migrationsTable = "schema_migrations"

// retiredUserVersion is what herald writes to PRAGMA user_version once
// schema_migrations holds the version. herald binaries from before
// golang-migrate read user_version as their schema version and refuse any
// above the migrations they know (store.ErrSchemaAhead, "upgrade herald"):
// so an old binary refuses a file it could not use, rather than running its
// first migration on tables that are already there.
const retiredUserVersion = 1_000_000

// ErrSchemaDirty is store.ErrSchemaDirty, returned for a database in which a
// migration began and did not finish (the process stopped between
// golang-migrate's steps, or the migration failed). herald cannot tell on its
// own which schema the file holds, so it changes nothing; the error says how
// to settle it.
var ErrSchemaDirty = store.ErrSchemaDirty

// Migration is one embedded schema migration.
type Migration = store.Migration

// SchemaStatus is where a database's schema stands. Its Database is the
// file's path; its Current is the version in schema_migrations (PRAGMA
// user_version for a file of herald before golang-migrate).
type SchemaStatus = store.SchemaStatus

// migrationsDir is where the embedded migrations live, in the layout
// golang-migrate reads (source/iofs) and store/postgres shares.
const migrationsDir = "migrations"

// migrationName is herald's naming rule, stricter than golang-migrate's
// (which skips a file it cannot parse): three digits, a lower-case name, up
// or down, .sql.
var migrationName = regexp.MustCompile(`^[0-9]{3}_[a-z0-9_]+\.(up|down)\.sql$`)

// migrations is the embedded list, checked once: numbered 1..n without gaps,
// each with its up and down file.
var migrations = mustLoadMigrations()

func mustLoadMigrations() []Migration {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		panic(err) // a build with broken embedded files must not ship; a test loads them
	}
	return ms
}

// loadMigrations lists the migrations in fsys as golang-migrate's iofs source
// reads them, and checks what herald promises beyond what that source does:
// every file is named by the rule, versions run 1..n without gaps, and each
// has an up and a down file under one name.
func loadMigrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, migrationsDir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !migrationName.MatchString(e.Name()) {
			return nil, fmt.Errorf("sqlite: migration file %q is not named NNN_name.up.sql or NNN_name.down.sql", e.Name())
		}
	}
	src, err := iofs.New(fsys, migrationsDir)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read the migrations: %w", err)
	}
	defer src.Close()
	var out []Migration
	v, err := src.First()
	for ; err == nil; v, err = src.Next(v) {
		want := uint(len(out) + 1)
		if v != want {
			return nil, fmt.Errorf("sqlite: migration %03d is missing (versions must run 1..n without gaps)", want)
		}
		up, upErr := identifier(src.ReadUp(v))
		down, downErr := identifier(src.ReadDown(v))
		switch {
		case errors.Is(upErr, fs.ErrNotExist) || errors.Is(downErr, fs.ErrNotExist):
			return nil, fmt.Errorf("sqlite: migration %03d_%s needs both an .up.sql and a .down.sql file", v, up+down)
		case upErr != nil || downErr != nil:
			return nil, fmt.Errorf("sqlite: read migration %03d: %w", v, errors.Join(upErr, downErr))
		case up != down:
			return nil, fmt.Errorf("sqlite: migration %03d has two names, %q and %q", v, up, down)
		}
		out = append(out, Migration{Version: int(v), Name: up})
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sqlite: read the migrations: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sqlite: no migration is embedded")
	}
	return out, nil
}

// identifier closes what a source's ReadUp or ReadDown opened and returns
// the migration's name.
func identifier(r io.ReadCloser, name string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return name, r.Close()
}

// SchemaVersion is the schema version this binary writes and reads.
func SchemaVersion() int { return len(migrations) }

// MigrateUp applies every pending migration to the database at path, creating
// the file if it does not exist, each migration in its own transaction. It
// returns the status after. Errors: store.ErrNotHerald (the file is not a
// herald database; nothing is changed), store.ErrSchemaAhead (a newer herald
// wrote it; nothing is changed), ErrSchemaDirty (a migration did not finish;
// nothing is changed), ErrBusy (another process has the file open), or the
// failure to open or write the file.
func MigrateUp(ctx context.Context, path string) (SchemaStatus, error) {
	return migrateFile(ctx, path, up)
}

// MigrateDown reverts the newest applied migration of the database at path
// (one step), in one transaction, and returns the status after. Reverting
// drops tables and the data in them. A database at version 0 is left alone.
// Errors: as MigrateUp; the file must exist.
func MigrateDown(ctx context.Context, path string) (SchemaStatus, error) {
	return migrateFile(ctx, path, down)
}

// MigrationStatus reports where the schema of the database at path stands,
// without changing it (a file that does not exist is reported at version 0
// and is not created). Errors: store.ErrNotHerald, or the failure to read the
// file. A newer schema is reported, not refused: Current > Latest. A dirty
// one is reported with Dirty set and ErrSchemaDirty, whose text says what to
// do.
func MigrationStatus(ctx context.Context, path string) (SchemaStatus, error) {
	kind, err := inspectFile(path)
	if err != nil {
		return SchemaStatus{}, err
	}
	var st schemaState
	if kind == fileSQLite {
		if st, err = inspectSchema(ctx, path); err != nil {
			return SchemaStatus{}, err
		}
	}
	if st.dirty && st.version <= len(migrations) {
		return status(path, st), fmt.Errorf("sqlite: open %s: %w", path, dirtyError(path, st.version))
	}
	return status(path, st), nil
}

func status(path string, st schemaState) SchemaStatus {
	s := SchemaStatus{Database: path, Current: st.version, Latest: len(migrations), Dirty: st.dirty, Migrations: slices.Clone(migrations)}
	for i := range s.Migrations {
		s.Migrations[i].Applied = s.Migrations[i].Version <= st.version
	}
	return s
}

// direction is which way a migration goes: up to the latest, or down one step.
type direction int

const (
	up direction = iota
	down
)

// schemaState is what a herald database says about its schema.
type schemaState struct {
	marked      bool // PRAGMA application_id is herald's (false: an empty database)
	version     int  // the version applied, 0 for none; when dirty, the one a migration was going to
	dirty       bool // golang-migrate began a migration and did not record its end
	legacy      bool // versioned by user_version alone: a file of herald before golang-migrate
	userVersion int  // PRAGMA user_version
}

// pending reports whether migrating in dir has anything to do: a legacy
// file always does (it is adopted first).
func (st schemaState) pending(dir direction) bool {
	if st.legacy {
		return true
	}
	if dir == up {
		return st.version < len(migrations)
	}
	return st.version > 0
}

// refusal is the error for a herald database this binary must not migrate
// or use: one a newer herald wrote, or a dirty one.
func (st schemaState) refusal(path string) error {
	switch {
	case st.version > len(migrations):
		return fmt.Errorf("%w (database at version %d, this binary knows up to %d)", store.ErrSchemaAhead, st.version, len(migrations))
	case st.dirty:
		return dirtyError(path, st.version)
	}
	return nil
}

// dirtyError tells the operator how to settle a dirty version: each
// migration runs in one transaction, so the schema is wholly at version or
// wholly at the version the migration started from.
func dirtyError(path string, version int) error {
	from := fmt.Sprintf("%d going up or %d going down", version-1, version+1)
	switch version {
	case 0:
		from = "1 going down"
	case len(migrations):
		from = fmt.Sprintf("%d going up", version-1)
	}
	return fmt.Errorf("%w: schema_migrations marks version %d dirty. The migration ran in one transaction, "+
		"so the schema is wholly at version %d or wholly at the version it started from (%s). "+
		"Compare `sqlite3 '%s' .schema` with the migrations, record the version the file holds with "+
		"`sqlite3 '%s' \"UPDATE schema_migrations SET version = N, dirty = 0\"` "+
		"(for version 0: \"DELETE FROM schema_migrations\"), and run herald again; or restore the file from a backup",
		ErrSchemaDirty, version, version, from, path, path)
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readState reads a database's schema state through q. It returns
// store.ErrNotHerald for a database that is not herald's and not empty; a
// newer or dirty version is for the caller to judge (refusal).
func readState(ctx context.Context, q queryer) (schemaState, error) {
	var st schemaState
	var app int
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return st, fmt.Errorf("read application id: %w", driverError(err))
	}
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&st.userVersion); err != nil {
		return st, fmt.Errorf("read schema version: %w", driverError(err))
	}
	switch {
	case app == applicationID:
		st.marked = true
	case app != 0:
		return st, fmt.Errorf("%w: the file belongs to another application (application id %#x)", store.ErrNotHerald, app)
	}
	names, err := tableNames(ctx, q)
	if err != nil {
		return st, err
	}
	if !st.marked {
		// No mark: an empty database, or another application's.
		if len(names) > 0 {
			if len(names) > 3 {
				names = append(names[:3], "…")
			}
			return st, fmt.Errorf("%w: it holds another application's tables (%s)", store.ErrNotHerald, strings.Join(names, ", "))
		}
		if st.userVersion != 0 {
			return st, fmt.Errorf("%w: it has schema version %d but not herald's application id", store.ErrNotHerald, st.userVersion)
		}
		return st, nil
	}
	if slices.Contains(names, migrationsTable) {
		var v int
		err := q.QueryRowContext(ctx, "SELECT version, dirty FROM "+migrationsTable+" LIMIT 1").Scan(&v, &st.dirty)
		switch {
		case err == nil:
			st.version = max(v, 0) // golang-migrate's "no version" is -1
			return st, nil
		case !errors.Is(err, sql.ErrNoRows):
			return st, fmt.Errorf("read %s: %w", migrationsTable, driverError(err))
		}
	}
	// No version recorded by golang-migrate: the old runner's user_version
	// holds it, unless herald retired it (a new database at version 0).
	if st.userVersion != 0 && st.userVersion != retiredUserVersion {
		st.legacy = true
		st.version = st.userVersion
	}
	return st, nil
}

// tableNames lists the database's own tables and indexes, by name.
func tableNames(ctx context.Context, q queryer) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", driverError(err))
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("list tables: %w", driverError(err))
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tables: %w", driverError(err))
	}
	return names, nil
}

// migrateFile checks the file without changing it and, when there is
// something to do, migrates it in dir (runMigrations).
func migrateFile(ctx context.Context, path string, dir direction) (SchemaStatus, error) {
	kind, err := inspectFile(path)
	if err != nil {
		return SchemaStatus{}, err
	}
	if dir == down && kind == fileMissing {
		return SchemaStatus{}, fmt.Errorf("sqlite: migrate down %s: %w", path, fs.ErrNotExist)
	}
	var st schemaState
	if kind == fileSQLite {
		if st, err = inspectSchema(ctx, path); err != nil {
			return SchemaStatus{}, err
		}
		if err := st.refusal(path); err != nil {
			return SchemaStatus{}, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
	}
	if kind != fileMissing && !st.pending(dir) {
		return status(path, st), nil // nothing to do: the file is not even opened for writing
	}
	if st, err = runMigrations(ctx, path, dir, st); err != nil {
		return SchemaStatus{}, err
	}
	return status(path, st), nil
}

// runMigrations opens the file on one connection in exclusive locking mode (no
// other process reads or writes it until the connection closes), reads its
// state again under that lock, marks a new database as herald's, adopts a
// legacy one, and runs golang-migrate in dir. seen is the state read before
// the lock: a step down is refused if another process changed the version
// meanwhile (the operator meant one step from what they saw).
func runMigrations(ctx context.Context, path string, dir direction, seen schemaState) (schemaState, error) {
	fail := func(err error) (schemaState, error) {
		return schemaState{}, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}
	db, err := openExclusive(ctx, path)
	if err != nil {
		return schemaState{}, err
	}
	defer db.Close()
	st, err := readState(ctx, db)
	if err != nil {
		return schemaState{}, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := st.refusal(path); err != nil {
		return schemaState{}, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if dir == down && (st.version != seen.version || st.legacy != seen.legacy) {
		return fail(fmt.Errorf("the database changed meanwhile (from version %d to %d); nothing was reverted", seen.version, st.version))
	}
	if !st.pending(dir) {
		return st, nil
	}
	if !st.marked {
		if err := setHeader(ctx, db); err != nil {
			return fail(err)
		}
	}
	drv, err := migratesqlite.WithInstance(db, &migratesqlite.Config{MigrationsTable: migrationsTable})
	if err != nil {
		return fail(fmt.Errorf("prepare %s: %w", migrationsTable, migrateError(err)))
	}
	if st.legacy {
		// Adopt a file of herald before golang-migrate: record its version.
		if err := drv.SetVersion(st.version, false); err != nil {
			return fail(fmt.Errorf("record version %d of a database of an older herald: %w", st.version, migrateError(err)))
		}
	}
	if st.marked && st.userVersion != retiredUserVersion {
		if err := setHeader(ctx, db); err != nil {
			return fail(err)
		}
	}
	src, err := iofs.New(migrationFiles, migrationsDir)
	if err != nil {
		return fail(err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "sqlite", drv)
	if err != nil {
		src.Close()
		return fail(err)
	}
	defer src.Close()
	// golang-migrate takes no context: a cancelled one stops it between
	// migrations.
	stop := context.AfterFunc(ctx, func() {
		select {
		case m.GracefulStop <- true:
		default:
		}
	})
	if dir == up {
		err = m.Up()
	} else {
		err = m.Steps(-1)
	}
	stop()
	if errors.Is(err, migrate.ErrNoChange) {
		err = nil
	}
	after, readErr := readState(context.WithoutCancel(ctx), db)
	switch {
	case err != nil && readErr == nil && after.dirty:
		return fail(fmt.Errorf("%w; %w", migrateError(err), dirtyError(path, after.version)))
	case err != nil:
		return fail(migrateError(err))
	case readErr != nil:
		return fail(readErr)
	case ctx.Err() != nil:
		return fail(ctx.Err())
	}
	return after, nil
}

// setHeader marks the file as herald's and retires user_version, in one
// transaction.
func setHeader(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return translate("mark the database", err)
	}
	defer tx.Rollback()
	// PRAGMA takes no bound parameters; both values are constants.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", applicationID, retiredUserVersion)); err != nil {
		return translate("mark the database", err)
	}
	return translate("mark the database", tx.Commit())
}

// exclusiveAttempt is how long one attempt to take the file for a
// migration waits. In WAL mode every open connection keeps a shared lock on
// the file, and so does a connection waiting to make its lock exclusive: two
// processes migrating at once would wait for each other until the busy
// timeout. So an attempt waits briefly, then closes its connection (releasing
// its shared lock) and tries again after a random pause, up to the busy
// timeout in all: one of them gets through, then the other.
const exclusiveAttempt = 50 * time.Millisecond

// openExclusive opens path for migrating: one connection in exclusive
// locking mode, in WAL mode, that has taken the write lock and so keeps the
// file to itself (no other connection reads or writes it) until it closes.
// It fails with ErrBusy when other connections kept the file open for the
// busy timeout: a running herald keeps its connections open.
func openExclusive(ctx context.Context, path string) (*sql.DB, error) {
	deadline := time.Now().Add(busyTimeoutMillis * time.Millisecond)
	for {
		db, err := takeFile(ctx, path)
		switch {
		case err == nil:
			return db, nil
		case !errors.Is(err, ErrBusy):
			return nil, err
		case time.Now().After(deadline):
			return nil, fmt.Errorf("sqlite: migrate %s: %w (a migration needs the file to itself: stop the herald that has it open and try again)", path, ErrBusy)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("sqlite: migrate %s: %w", path, ctx.Err())
		case <-time.After(rand.N(exclusiveAttempt)):
		}
	}
}

// takeFile makes one attempt of openExclusive.
func takeFile(ctx context.Context, path string) (*sql.DB, error) {
	db, err := openDB(path, migratorDSN(path))
	if err != nil {
		return nil, err
	}
	// Pages freed by pruning go back to the file system a batch at a time
	// (PRAGMA incremental_vacuum, in Prune). This takes effect only in a
	// file without tables yet, so it is set before the first migration; a
	// file herald created before retention keeps its pages until VACUUM.
	if _, err = db.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		db.Close()
		return nil, translate("set auto_vacuum", err)
	}
	if err = setWAL(ctx, db); err == nil {
		var tx *sql.Tx
		if tx, err = db.BeginTx(ctx, nil); err == nil {
			err = tx.Commit()
		}
		err = translate("lock the database", err)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// migrateError translates an error from golang-migrate: its database.Error
// carries the driver's error (translated here) and the migration's whole
// SQL (left out).
func migrateError(err error) error {
	var ptr *database.Error
	var val database.Error
	switch {
	case errors.As(err, &ptr):
		val = *ptr
	case errors.As(err, &val):
	default:
		return driverError(err)
	}
	if val.Err != "" {
		return fmt.Errorf("%s: %w", val.Err, driverError(val.OrigErr))
	}
	return driverError(val.OrigErr)
}
