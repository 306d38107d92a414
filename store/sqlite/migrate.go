package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"

	"github.com/heraldpush/herald/store"
)

// The schema's version lives in the database header, PRAGMA user_version,
// written in the same transaction as the migration's DDL: a migration and its
// version commit together or not at all. PRAGMA application_id marks the file
// as herald's, so that another application's SQLite file is never mistaken for
// an empty one.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// applicationID is herald's mark in the SQLite header (PRAGMA
// application_id): the bytes "HRLD".
const applicationID = 0x48524c44

// Migration is one embedded schema migration.
type Migration struct {
	Version int    `json:"version"` // 1-based, contiguous
	Name    string `json:"name"`    // e.g. "journal"
	Applied bool   `json:"applied"`
	up      string
	down    string
}

// SchemaStatus is where a database's schema stands.
type SchemaStatus struct {
	Path       string      `json:"path"`
	Current    int         `json:"current"` // PRAGMA user_version; 0 for a new database
	Latest     int         `json:"latest"`  // the newest migration this binary embeds
	Migrations []Migration `json:"migrations"`
}

// Pending reports whether migrations remain to be applied.
func (s SchemaStatus) Pending() bool { return s.Current < s.Latest }

var migrationName = regexp.MustCompile(`^([0-9]{3})_([a-z0-9_]+)\.(up|down)\.sql$`)

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

func loadMigrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("sqlite: migration file %q is not named NNN_name.up.sql or NNN_name.down.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		body, err := fs.ReadFile(fsys, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		mig := byVersion[v]
		if mig == nil {
			mig = &Migration{Version: v, Name: m[2]}
			byVersion[v] = mig
		}
		if mig.Name != m[2] {
			return nil, fmt.Errorf("sqlite: migration %03d has two names, %q and %q", v, mig.Name, m[2])
		}
		if m[3] == "up" {
			mig.up = string(body)
		} else {
			mig.down = string(body)
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for v := 1; v <= len(byVersion); v++ {
		mig := byVersion[v]
		if mig == nil {
			return nil, fmt.Errorf("sqlite: migration %03d is missing (versions must run 1..%d without gaps)", v, len(byVersion))
		}
		if mig.up == "" || mig.down == "" {
			return nil, fmt.Errorf("sqlite: migration %03d_%s needs both an .up.sql and a .down.sql file", v, mig.Name)
		}
		out = append(out, *mig)
	}
	return out, nil
}

// SchemaVersion is the schema version this binary writes and reads.
func SchemaVersion() int { return len(migrations) }

// MigrateUp applies every pending migration to the database at path, creating
// the file if it does not exist, each migration in its own transaction. It
// returns the status after. Errors: store.ErrNotHerald (the file is not a
// herald database; nothing is changed), store.ErrSchemaAhead (a newer herald
// wrote it; nothing is changed), or the failure to open or write the file.
func MigrateUp(ctx context.Context, path string) (SchemaStatus, error) {
	return migrate(ctx, path, planUp)
}

// MigrateDown reverts the newest applied migration of the database at path
// (one step), in one transaction, and returns the status after. Reverting
// drops tables and the data in them. A database at version 0 is left alone.
// Errors: as MigrateUp; the file must exist.
func MigrateDown(ctx context.Context, path string) (SchemaStatus, error) {
	kind, err := inspectFile(path)
	if err != nil {
		return SchemaStatus{}, err
	}
	if kind == fileMissing {
		return SchemaStatus{}, fmt.Errorf("sqlite: migrate down %s: %w", path, fs.ErrNotExist)
	}
	return migrate(ctx, path, func(current int) []step {
		if current == 0 {
			return nil
		}
		return []step{{migrations[current-1].down, current - 1}}
	})
}

// MigrationStatus reports where the schema of the database at path stands,
// without changing it (a file that does not exist is reported at version 0
// and is not created). Errors: store.ErrNotHerald, or the failure to read the
// file. A newer schema is reported, not refused: Current > Latest.
func MigrationStatus(ctx context.Context, path string) (SchemaStatus, error) {
	kind, err := inspectFile(path)
	if err != nil {
		return SchemaStatus{}, err
	}
	current := 0
	if kind == fileSQLite {
		if current, err = inspectSchema(ctx, path); err != nil && !isAhead(err) {
			return SchemaStatus{}, err
		}
	}
	return status(path, current), nil
}

func status(path string, current int) SchemaStatus {
	st := SchemaStatus{Path: path, Current: current, Latest: len(migrations), Migrations: slices.Clone(migrations)}
	for i := range st.Migrations {
		st.Migrations[i].Applied = st.Migrations[i].Version <= current
	}
	return st
}

type step struct {
	sql string
	to  int // the version after the step
}

// migrate checks the file without changing it, then opens it and runs the
// steps plan returns for the current version, each in its own write
// transaction that re-reads the version under the write lock (another process
// may have migrated meanwhile).
func migrate(ctx context.Context, path string, plan func(current int) []step) (SchemaStatus, error) {
	kind, err := inspectFile(path)
	if err != nil {
		return SchemaStatus{}, err
	}
	current := 0
	if kind == fileSQLite {
		if current, err = inspectSchema(ctx, path); err != nil {
			return SchemaStatus{}, err
		}
	}
	if len(plan(current)) == 0 && kind != fileMissing {
		return status(path, current), nil // nothing to do: the file is not even opened for writing
	}
	db, err := openDB(path, writerDSN(path, syncFull))
	if err != nil {
		return SchemaStatus{}, err
	}
	defer db.Close()
	if err := setWAL(ctx, db); err != nil {
		return SchemaStatus{}, err
	}
	if current, err = runMigrations(ctx, db, plan); err != nil {
		return SchemaStatus{}, err
	}
	return status(path, current), nil
}

// runMigrations runs plan's steps on db, the single write connection.
func runMigrations(ctx context.Context, db *sql.DB, plan func(current int) []step) (int, error) {
	current, err := schemaVersion(ctx, db)
	if err != nil {
		return 0, err
	}
	if current > len(migrations) {
		return 0, fmt.Errorf("%w (database at version %d, this binary knows up to %d)", store.ErrSchemaAhead, current, len(migrations))
	}
	for _, st := range plan(current) {
		if err := runStep(ctx, db, current, st); err != nil {
			return 0, err
		}
		current = st.to
	}
	return current, nil
}

func runStep(ctx context.Context, db *sql.DB, from int, st step) error {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		return translate("begin migration", err)
	}
	defer tx.Rollback()
	v, app, err := header(ctx, tx)
	if err != nil {
		return err
	}
	if v != from || (app != applicationID && (app != 0 || v != 0)) {
		return fmt.Errorf("sqlite: migrate from version %d: the database changed meanwhile (now version %d, application id %#x)", from, v, app)
	}
	if _, err := tx.ExecContext(ctx, st.sql); err != nil {
		return translate(fmt.Sprintf("migrate from version %d to %d", from, st.to), err)
	}
	id := applicationID
	if st.to == 0 {
		id = 0 // fully reverted: an empty SQLite file again
	}
	// PRAGMA takes no bound parameters; both values are integers we format.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d; PRAGMA application_id = %d", st.to, id)); err != nil {
		return translate("record schema version", err)
	}
	if err := tx.Commit(); err != nil {
		return translate(fmt.Sprintf("commit migration to version %d", st.to), err)
	}
	return nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func header(ctx context.Context, q queryer) (version, app int, err error) {
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, 0, translate("read schema version", err)
	}
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return 0, 0, translate("read application id", err)
	}
	return version, app, nil
}

func schemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	v, _, err := header(ctx, db)
	return v, err
}

func isAhead(err error) bool { return errors.Is(err, store.ErrSchemaAhead) }
