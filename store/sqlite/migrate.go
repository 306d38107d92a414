package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/heraldpush/herald/internal/migrate"
	"github.com/heraldpush/herald/store"
)

// Migrations are run by internal/migrate, as store/postgres's are: each in
// one BEGIN IMMEDIATE transaction (SQLite's write lock, which holds across
// processes) together with its row in schema_migrations. Before that,
// herald decides whose file it is: PRAGMA application_id marks a herald
// database; a file without the mark must be empty (a new database), or it
// is refused.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// applicationID is herald's mark in the SQLite header (PRAGMA
// application_id): the bytes "HRLD".
const applicationID = 0x48524c44

// migrationsTable records the version, in golang-migrate's shape.
const migrationsTable = "schema_migrations"

// schema is the embedded migrations.
var schema = migrate.MustLoad(migrationFiles, "migrations", migrationsTable)

// ErrSchemaDirty is store.ErrSchemaDirty, returned for a database whose
// version is marked dirty (a migration began and did not finish). herald
// changes nothing; the error says how to settle it.
var ErrSchemaDirty = store.ErrSchemaDirty

// Migration is one embedded schema migration.
type Migration = store.Migration

// SchemaStatus is where a database's schema stands. Its Database is the
// file's path; its Current is the version in schema_migrations.
type SchemaStatus = store.SchemaStatus

// SchemaVersion is the schema version this binary writes and reads.
func SchemaVersion() int { return schema.Latest() }

// MigrateUp applies every pending migration to the database at path, creating
// the file if it does not exist, each migration in its own transaction. It
// returns the status after. Errors: store.ErrNotHerald (the file is not a
// herald database), store.ErrSchemaAhead (a newer herald wrote it),
// ErrSchemaDirty, all changing nothing; ErrBusy (another process held the
// write lock for the busy timeout), or the failure to open or write the
// file.
func MigrateUp(ctx context.Context, path string) (SchemaStatus, error) {
	return migrateFile(ctx, path, true)
}

// MigrateDown reverts the newest applied migration of the database at path
// (one step), in one transaction, and returns the status after. Reverting
// drops tables and the data in them. A database at version 0 is left alone.
// Errors: as MigrateUp; the file must exist.
func MigrateDown(ctx context.Context, path string) (SchemaStatus, error) {
	return migrateFile(ctx, path, false)
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
	status := schema.Status(path, st.version, st.dirty)
	if st.dirty {
		return status, fmt.Errorf("sqlite: open %s: %w", path, schema.Check(st.version, st.dirty))
	}
	return status, nil
}

// schemaState is what a herald database says about its schema.
type schemaState struct {
	marked  bool // PRAGMA application_id is herald's (false: an empty database)
	version int  // the version applied, 0 for none
	dirty   bool // the version is marked dirty: a migration began and did not record its end
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readState reads a database's schema state through q. It returns
// store.ErrNotHerald for a database that is not herald's and not empty; a
// newer or dirty version is for the caller to judge (schema.Check).
func readState(ctx context.Context, q queryer) (schemaState, error) {
	var st schemaState
	var app, userVersion int
	if err := q.QueryRowContext(ctx, sqlApplicationID).Scan(&app); err != nil {
		return st, fmt.Errorf("read application id: %w", driverError(err))
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
	hasTable := slices.Contains(names, migrationsTable)
	switch {
	case !st.marked && len(names) > 0:
		if len(names) > 3 {
			names = append(names[:3], "…")
		}
		return st, fmt.Errorf("%w: it holds another application's tables (%s)", store.ErrNotHerald, strings.Join(names, ", "))
	case !st.marked:
		if err := q.QueryRowContext(ctx, sqlUserVersion).Scan(&userVersion); err != nil {
			return st, fmt.Errorf("read schema version: %w", driverError(err))
		}
		if userVersion != 0 {
			return st, fmt.Errorf("%w: it has schema version %d but not herald's application id", store.ErrNotHerald, userVersion)
		}
		return st, nil // an empty database
	case !hasTable && len(names) > 0:
		return st, fmt.Errorf("%w: it has herald's application id and tables but no %s table recording their version", store.ErrNotHerald, migrationsTable)
	case !hasTable:
		return st, nil
	}
	err = q.QueryRowContext(ctx, sqlCurrentVersion).Scan(&st.version, &st.dirty)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return st, nil // version 0
	case err != nil:
		return st, fmt.Errorf("read %s: %w", migrationsTable, driverError(err))
	}
	st.version = max(st.version, 0) // golang-migrate's "no version" is -1
	return st, nil
}

// tableNames lists the database's own tables and indexes, by name.
func tableNames(ctx context.Context, q queryer) ([]string, error) {
	rows, err := q.QueryContext(ctx, sqlTableNames)
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
// something to do, migrates it up to the latest version, or down one step.
func migrateFile(ctx context.Context, path string, up bool) (SchemaStatus, error) {
	kind, err := inspectFile(path)
	if err != nil {
		return SchemaStatus{}, err
	}
	if !up && kind == fileMissing {
		return SchemaStatus{}, fmt.Errorf("sqlite: migrate down %s: %w", path, fs.ErrNotExist)
	}
	var st schemaState
	if kind == fileSQLite {
		if st, err = inspectSchema(ctx, path); err != nil {
			return SchemaStatus{}, err
		}
		if err := schema.Check(st.version, st.dirty); err != nil {
			return SchemaStatus{}, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
	}
	pending := st.version < schema.Latest()
	if !up {
		pending = st.version > 0
	}
	if kind != fileMissing && !pending {
		return schema.Status(path, st.version, false), nil // nothing to do: the file is not even opened for writing
	}
	db, err := openMigrator(ctx, path)
	if err != nil {
		return SchemaStatus{}, err
	}
	defer db.Close()
	begin := func(ctx context.Context) (migrate.Tx, error) {
		tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the writer's DSN
		if err != nil {
			return nil, fmt.Errorf("lock the database: %w", driverError(err))
		}
		return &migrationTx{tx: tx}, nil
	}
	var v int
	if up {
		v, err = schema.Up(ctx, begin)
	} else {
		v, err = schema.Down(ctx, begin, st.version)
	}
	if err != nil {
		return SchemaStatus{}, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}
	return schema.Status(path, v, false), nil
}

// openMigrator opens path on one connection as the writer's, in WAL mode.
func openMigrator(ctx context.Context, path string) (*sql.DB, error) {
	db, err := openDB(path, writerDSN(path, syncFull))
	if err != nil {
		return nil, err
	}
	// Pages freed by pruning go back to the file system a batch at a time
	// (PRAGMA incremental_vacuum, in Prune). This takes effect only in a
	// file without tables yet, so it is set before the first migration; a
	// file herald created before retention keeps its pages until VACUUM.
	if _, err = db.ExecContext(ctx, sqlAutoVacuum); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, translate("set auto_vacuum", err))
	}
	if err := setWAL(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return db, nil
}

// migrationTx is internal/migrate's transaction on SQLite.
type migrationTx struct {
	tx     *sql.Tx
	marked bool
}

func (t *migrationTx) Version(ctx context.Context) (int, bool, error) {
	st, err := readState(ctx, t.tx)
	t.marked = st.marked
	return st.version, st.dirty, err
}

func (t *migrationTx) Apply(ctx context.Context, what, sql string, version int) error {
	// Kept here, beside the runner (as store/postgres keeps its bookkeeping):
	// two of these format the version and the application id in.
	stmts := []string{
		sql,
		// golang-migrate's table, as it created it.
		"CREATE TABLE IF NOT EXISTS " + migrationsTable + " (version uint64, dirty bool)",
		"CREATE UNIQUE INDEX IF NOT EXISTS version_unique ON " + migrationsTable + " (version)",
		"DELETE FROM " + migrationsTable,
	}
	if version > 0 {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO %s (version, dirty) VALUES (%d, 0)", migrationsTable, version))
	}
	if !t.marked {
		// PRAGMA takes no bound parameters; the value is a constant.
		stmts = append(stmts, fmt.Sprintf("PRAGMA application_id = %d", applicationID))
	}
	for _, s := range stmts {
		if _, err := t.tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", what, driverError(err))
		}
	}
	return nil
}

func (t *migrationTx) Commit(context.Context) error { return driverError(t.tx.Commit()) }

func (t *migrationTx) Rollback(context.Context) error { return t.tx.Rollback() }
