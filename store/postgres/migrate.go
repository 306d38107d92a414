package postgres

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
	"sync"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/heraldpush/herald/store"
)

// The schema lives in migrations/NNN_name.up.sql and NNN_name.down.sql,
// embedded in the binary (the layout store/sqlite uses too). golang-migrate
// applies them: it records the version in versionTable, and holds a
// PostgreSQL advisory lock (keyed by database, schema and table) while it
// migrates, so that two `herald migrate up` run at once apply each migration
// once. Each file runs as one multi-statement query, which PostgreSQL runs
// in one transaction: a migration's changes are made all or not at all.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable is where golang-migrate records the schema version: one row
// (version bigint, dirty boolean), none before the first migration and
// after the last is reverted.
const versionTable = "herald_schema_migrations"

// lockWait bounds how long a migration waits for a lock: the advisory lock
// another `herald migrate` holds, or a table lock a migration's DDL needs
// (herald's migrations take well under a second; a longer wait means a
// stuck process or a long transaction, which waiting longer would queue all
// of herald's traffic behind). ctx's deadline, if earlier, bounds it
// instead. PostgreSQL enforces it (lock_timeout), so that no connection is
// left waiting for a lock after the call returns.
const lockWait = 2 * time.Minute

// ErrSchemaDirty is store.ErrSchemaDirty: a migration of this database
// started and did not finish (golang-migrate's dirty flag: it failed, or its
// process died). Opening and migrating refuse the database until an operator
// has checked the schema and recorded the version that is in place.
var ErrSchemaDirty = store.ErrSchemaDirty

// Migration is one embedded schema migration.
type Migration = store.Migration

// SchemaStatus is where a database's schema stands. Its Database is the
// database's name (never the URL, which may hold a password); its Current is
// the version recorded in herald_schema_migrations.
type SchemaStatus = store.SchemaStatus

var migrationName = regexp.MustCompile(`^([0-9]{3})_([a-z0-9_]+)\.(up|down)\.sql$`)

// migrations is the embedded list, checked once: numbered 1..n without
// gaps, each with its up and down file.
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
	type files struct {
		name     string
		up, down bool
	}
	byVersion := map[int]*files{}
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("store/postgres: migration file %q is not named NNN_name.up.sql or NNN_name.down.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		f := byVersion[v]
		if f == nil {
			f = &files{name: m[2]}
			byVersion[v] = f
		}
		if f.name != m[2] {
			return nil, fmt.Errorf("store/postgres: migration %03d has two names, %q and %q", v, f.name, m[2])
		}
		if m[3] == "up" {
			f.up = true
		} else {
			f.down = true
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for v := 1; v <= len(byVersion); v++ {
		f := byVersion[v]
		if f == nil {
			return nil, fmt.Errorf("store/postgres: migration %03d is missing (versions must run 1..%d without gaps)", v, len(byVersion))
		}
		if !f.up || !f.down {
			return nil, fmt.Errorf("store/postgres: migration %03d_%s needs both an .up.sql and a .down.sql file", v, f.name)
		}
		out = append(out, Migration{Version: v, Name: f.name})
	}
	return out, nil
}

// SchemaVersion is the schema version this binary writes and reads.
func SchemaVersion() int { return len(migrations) }

// MigrateUp applies every pending migration to the database at url (a
// postgres:// URL or key=value connection string), each in its own
// transaction, and returns the status after. Another MigrateUp running at
// the same time waits for this one (up to two minutes, or until ctx's
// deadline: PostgreSQL's lock_timeout), then finds nothing to do. Errors: store.ErrNotHerald (herald's table names without its
// version table, or a foreign version table) and store.ErrSchemaAhead (a
// newer herald migrated it), both changing nothing; ErrSchemaDirty;
// journal.ErrInvalid (url); ErrUnavailable; a failed migration as an *Error
// with the server's message.
func MigrateUp(ctx context.Context, url string) (SchemaStatus, error) {
	return withPool(ctx, url, func(pool *pgxpool.Pool) (SchemaStatus, error) {
		st, err := readSchema(ctx, pool)
		if err != nil {
			return SchemaStatus{}, err
		}
		if st.Current > st.Latest {
			return SchemaStatus{}, ahead(st)
		}
		// A dirty version is judged by golang-migrate under its lock: the
		// flag seen here may be another MigrateUp's, still running.
		if err := runMigrate(ctx, pool, "migrate up", (*migrate.Migrate).Up); err != nil {
			return SchemaStatus{}, err
		}
		return readSchema(ctx, pool)
	})
}

// MigrateDown reverts the newest applied migration of the database at url
// (one step), in one transaction, and returns the status after. Reverting
// drops tables and the data in them; reverting version 1 leaves no herald
// table but the empty version table. A database at version 0 is left alone.
// Errors: as MigrateUp; store.ErrSchemaAhead (never migrate down what a
// newer herald wrote) and ErrSchemaDirty change nothing.
func MigrateDown(ctx context.Context, url string) (SchemaStatus, error) {
	return withPool(ctx, url, func(pool *pgxpool.Pool) (SchemaStatus, error) {
		st, err := readSchema(ctx, pool)
		switch {
		case err != nil:
			return SchemaStatus{}, err
		case st.Current > st.Latest:
			return SchemaStatus{}, ahead(st)
		case st.Dirty:
			return SchemaStatus{}, dirty(st)
		case st.Current == 0:
			return st, nil
		}
		if st.Current == sequencedVersion {
			if err := prepareUnsequence(ctx, pool); err != nil {
				return SchemaStatus{}, err
			}
		}
		down := func(m *migrate.Migrate) error { return m.Steps(-1) }
		if err := runMigrate(ctx, pool, "migrate down", down); err != nil {
			return SchemaStatus{}, err
		}
		return readSchema(ctx, pool)
	})
}

// sequencedVersion is the schema version that introduced the sequencer
// (003_sequencer): below it every record has a seq.
const sequencedVersion = 3

// prepareUnsequence readies a database for reverting sequencedVersion:
// it numbers every committed record without a seq, and refuses, changing
// nothing else, while refused records exist (version 2 cannot keep them).
func prepareUnsequence(ctx context.Context, pool *pgxpool.Pool) error {
	s := &Store{pool: pool, now: time.Now, notify: true, appended: make(chan struct{}, 1)}
	if _, err := s.sequence(ctx, seqWait); err != nil {
		return err
	}
	var refused int64
	if err := pool.QueryRow(ctx, sqlCountRefused).Scan(&refused); err != nil {
		return dbError(ctx, "migrate down", err)
	}
	if refused > 0 {
		return &Error{Op: "migrate down", Message: fmt.Sprintf("%d records were refused by the sequencer (herald_record.refused, listed by Store.Refused) "+
			"and schema version 2 cannot keep them: delete them (DELETE FROM herald_record WHERE refused IS NOT NULL) to migrate down; nothing was changed", refused)}
	}
	return nil
}

// MigrationStatus reports where the schema of the database at url stands,
// changing nothing (not even creating the version table). A newer schema is
// reported, not refused (Current > Latest), and so is a dirty one (Dirty).
// Errors: store.ErrNotHerald, journal.ErrInvalid (url), ErrUnavailable.
func MigrationStatus(ctx context.Context, url string) (SchemaStatus, error) {
	return withPool(ctx, url, func(pool *pgxpool.Pool) (SchemaStatus, error) {
		return readSchema(ctx, pool)
	})
}

// withPool runs fn with a pool of its own on url, closed afterwards, whose
// connections wait at most lockWait (or until ctx's deadline) for a lock.
func withPool(ctx context.Context, url string, fn func(*pgxpool.Pool) (SchemaStatus, error)) (SchemaStatus, error) {
	wait := lockWait
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(deadline))
	}
	if wait <= 0 {
		return SchemaStatus{}, fmt.Errorf("store/postgres: migrate: %w", context.DeadlineExceeded)
	}
	params := map[string]string{"lock_timeout": strconv.FormatInt(max(wait.Milliseconds(), 1), 10)}
	pool, err := newPool(ctx, url, params)
	if err != nil {
		return SchemaStatus{}, err
	}
	defer pool.Close()
	return fn(pool)
}

// runMigrate runs op (Up, or Steps(-1)) of a golang-migrate instance over
// the embedded files and connections of its own to pool's database.
// golang-migrate takes no context: the connections' lock_timeout bounds its
// waits for locks, and ctx's cancellation stops the run between two
// migrations.
func runMigrate(ctx context.Context, pool *pgxpool.Pool, op string, run func(*migrate.Migrate) error) error {
	src, err := iofs.New(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("store/postgres: %s: read the embedded migrations: %w", op, err)
	}
	db, closeDB := migrationDB(pool.Config().ConnConfig)
	defer closeDB()
	drv, err := migratepgx.WithInstance(db, &migratepgx.Config{MigrationsTable: versionTable})
	if err != nil {
		return migrateError(ctx, op, err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		_ = drv.Close()
		return migrateError(ctx, op, err)
	}
	defer m.Close()
	// The server's lock_timeout ends a wait first; this is a backstop.
	m.LockTimeout = lockWait + time.Minute
	stop := context.AfterFunc(ctx, func() { m.GracefulStop <- true })
	defer stop()
	err = run(m)
	if errors.Is(err, migrate.ErrNoChange) {
		err = nil
	}
	if err == nil {
		return migrateError(ctx, op, ctx.Err()) // stopped between two migrations?
	}
	if v, dirty, verr := drv.Version(); verr == nil && dirty {
		op = fmt.Sprintf("%s (left version %d dirty)", op, v)
	}
	return migrateError(ctx, op, err)
}

// migrationDB opens a database/sql handle for golang-migrate on connections
// of its own, and returns a function that closes the handle and every
// connection it opened. Closing the handle is not enough: when
// golang-migrate's driver fails to start (a lock it waited for timed out),
// it keeps the *sql.Conn it took and never closes it, which would leave a
// connection open (and, from a pgxpool, make closing the pool wait
// forever).
func migrationDB(cfg *pgx.ConnConfig) (*sql.DB, func()) {
	var (
		mu    sync.Mutex
		conns []*pgx.Conn
	)
	track := func(ctx context.Context, c *pgx.Conn) error {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
		return nil
	}
	db := stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(track))
	return db, func() {
		_ = db.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close(context.Background())
		}
	}
}

// migrateError translates golang-migrate's errors: no pgx or golang-migrate
// type is reachable from the result.
func migrateError(ctx context.Context, op string, err error) error {
	var (
		dirtyErr migrate.ErrDirty
		dbErr    database.Error
		dbErrPtr *database.Error
	)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("store/postgres: %s: %w", op, err)
	case errors.As(err, &dirtyErr):
		return dirty(SchemaStatus{Current: dirtyErr.Version, Latest: SchemaVersion()})
	case errors.Is(err, migrate.ErrLockTimeout):
		return &Error{Op: op, Message: "another herald migrate holds the migration lock (a PostgreSQL advisory lock)"}
	case errors.As(err, &dbErrPtr):
		return databaseError(ctx, op, *dbErrPtr)
	case errors.As(err, &dbErr):
		return databaseError(ctx, op, dbErr)
	}
	return dbError(ctx, op, err)
}

// databaseError translates golang-migrate's wrapper of a failed query, such
// as a migration the server refused.
func databaseError(ctx context.Context, op string, e database.Error) error {
	if e.OrigErr == nil {
		return &Error{Op: op, Message: e.Err}
	}
	var pgErr *pgconn.PgError
	if errors.As(e.OrigErr, &pgErr) && pgErr.Position > 0 {
		op = fmt.Sprintf("%s, line %d of the migration", op, e.Line)
	}
	err := dbError(ctx, op, e.OrigErr)
	var he *Error
	if pgErr != nil && pgErr.Code == "55P03" && errors.As(err, &he) { // lock_not_available: lock_timeout expired
		he.Message = "gave up waiting for a lock (PostgreSQL lock_timeout): another herald migrate, " +
			"or a long transaction on herald's tables, holds it: " + pgErr.Message
	}
	return err
}

func ahead(st SchemaStatus) error {
	return fmt.Errorf("store/postgres: the database schema is version %d, this herald knows up to %d: %w", st.Current, st.Latest, store.ErrSchemaAhead)
}

func dirty(st SchemaStatus) error {
	name := ""
	if st.Current >= 1 && st.Current <= len(migrations) {
		name = fmt.Sprintf(" (%03d_%s)", st.Current, migrations[st.Current-1].Name)
	}
	return fmt.Errorf("store/postgres: %s records version %d%s as dirty: a migration to or from it failed or was interrupted. "+
		"Each migration runs in one transaction, so the schema is at that version, or at the one before it (a failed up) or after it (a failed down): check which, "+
		"then record it (UPDATE %s SET version = N, dirty = false; for version 0, DELETE FROM %s): %w",
		versionTable, st.Current, name, versionTable, versionTable, ErrSchemaDirty)
}

// readSchema reads the schema version of the database behind pool, changing
// nothing. Errors: store.ErrNotHerald, or the database's failure.
func readSchema(ctx context.Context, pool *pgxpool.Pool) (SchemaStatus, error) {
	st := SchemaStatus{Latest: len(migrations), Migrations: slices.Clone(migrations)}
	var tableExists, shaped, heraldTables bool
	if err := pool.QueryRow(ctx, sqlSchemaProbe, versionTable).Scan(&st.Database, &tableExists, &shaped, &heraldTables); err != nil {
		return SchemaStatus{}, dbError(ctx, "check schema version", err)
	}
	switch {
	case !tableExists && heraldTables:
		return SchemaStatus{}, fmt.Errorf("store/postgres: the database has herald tables but no %s table recording their version: %w", versionTable, store.ErrNotHerald)
	case !tableExists:
		return st, nil
	case !shaped:
		return SchemaStatus{}, fmt.Errorf("store/postgres: table %s is not a herald version table (version bigint, dirty boolean): %w", versionTable, store.ErrNotHerald)
	}
	var version int64
	err := pool.QueryRow(ctx, sqlCurrentVersion).Scan(&version, &st.Dirty)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		version = 0
	case err != nil:
		return SchemaStatus{}, dbError(ctx, "check schema version", err)
	}
	st.Current = int(max(version, 0))
	for i := range st.Migrations {
		st.Migrations[i].Applied = st.Migrations[i].Version <= st.Current
	}
	return st, nil
}

// checkSchema is what opening a store requires: this binary's version,
// clean. Errors wrap store.ErrSchemaBehind ("run herald migrate up"),
// store.ErrSchemaAhead, ErrSchemaDirty or store.ErrNotHerald.
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	st, err := readSchema(ctx, pool)
	switch {
	case err != nil:
		return err
	case st.Dirty:
		return dirty(st)
	case st.Current < st.Latest && st.Current == 0:
		return fmt.Errorf("store/postgres: the database has no herald schema (version 0, this herald needs %d): %w", st.Latest, store.ErrSchemaBehind)
	case st.Current < st.Latest:
		return fmt.Errorf("store/postgres: the database schema is version %d, this herald needs %d: %w", st.Current, st.Latest, store.ErrSchemaBehind)
	case st.Current > st.Latest:
		return ahead(st)
	}
	return nil
}
