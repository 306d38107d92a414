package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldpush/herald/internal/migrate"
	"github.com/heraldpush/herald/store"
)

// The schema lives in migrations/NNN_name.up.sql and NNN_name.down.sql,
// embedded in the binary and run by internal/migrate, as store/sqlite's
// are: each migration in one transaction (PostgreSQL's DDL is
// transactional) together with its row in versionTable, under an advisory
// transaction lock (sqlMigrationLock), so that two `herald migrate up` run
// at once take turns and apply each migration once.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable records the schema version: one row (version bigint, dirty
// boolean), none at version 0, in golang-migrate's shape.
const versionTable = "herald_schema_migrations"

// schema is the embedded migrations.
var schema = migrate.MustLoad(migrationFiles, "migrations", versionTable)

// The migration runner's statements. migrationLockKey keys the advisory
// lock; PostgreSQL scopes advisory locks to a database.
const (
	migrationLockKey  = `hashtextextended('herald_schema_migrations', 0)`
	sqlMigrationLock  = `SELECT pg_advisory_xact_lock(` + migrationLockKey + `)`
	sqlCreateVersions = `CREATE TABLE IF NOT EXISTS ` + versionTable + ` (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)`
	sqlClearVersion   = `DELETE FROM ` + versionTable
	sqlRecordVersion  = `INSERT INTO ` + versionTable + ` (version, dirty) VALUES ($1, false)`
	lockNotAvailable  = "55P03" // SQLSTATE lock_not_available: lock_timeout expired
)

// lockWait bounds how long a migration waits for a lock: the advisory lock
// another `herald migrate` holds, or a table lock a migration's DDL needs
// (herald's migrations take well under a second; a longer wait means a
// stuck process or a long transaction, which waiting longer would queue all
// of herald's traffic behind). ctx's deadline, if earlier, bounds it
// instead. PostgreSQL enforces it (lock_timeout), so that no connection is
// left waiting for a lock after the call returns.
const lockWait = 2 * time.Minute

// ErrSchemaDirty is store.ErrSchemaDirty: the version table marks its
// version dirty (a migration began and did not finish; herald's runner never
// leaves one so). Opening and migrating refuse the database until an
// operator has checked the schema and recorded the version that is in place.
var ErrSchemaDirty = store.ErrSchemaDirty

// Migration is one embedded schema migration.
type Migration = store.Migration

// SchemaStatus is where a database's schema stands. Its Database is the
// database's name (never the URL, which may hold a password); its Current is
// the version recorded in herald_schema_migrations.
type SchemaStatus = store.SchemaStatus

// SchemaVersion is the schema version this binary writes and reads.
func SchemaVersion() int { return schema.Latest() }

// MigrateUp applies every pending migration to the database at url (a
// postgres:// URL or key=value connection string), each in its own
// transaction, and returns the status after. Another MigrateUp running at
// the same time waits for this one (up to two minutes, or until ctx's
// deadline: PostgreSQL's lock_timeout), then finds nothing to do. Errors:
// store.ErrNotHerald (herald's table names without its version table, or a
// foreign version table), store.ErrSchemaAhead (a newer herald migrated it)
// and ErrSchemaDirty, all changing nothing; journal.ErrInvalid (url);
// ErrUnavailable; a failed migration (rolled back whole) as an *Error with
// the server's message.
func MigrateUp(ctx context.Context, url string) (SchemaStatus, error) {
	return withPool(ctx, url, func(pool *pgxpool.Pool) (SchemaStatus, error) {
		if _, err := schema.Up(ctx, beginMigration(pool, "migrate up")); err != nil {
			return SchemaStatus{}, prefixed(err)
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
		case st.Current == 0:
			return st, nil
		}
		if _, err := schema.Down(ctx, beginMigration(pool, "migrate down"), st.Current); err != nil {
			return SchemaStatus{}, prefixed(err)
		}
		return readSchema(ctx, pool)
	})
}

// MigrationStatus reports where the schema of the database at url stands,
// changing nothing (not even creating the version table). A newer schema is
// reported, not refused (Current > Latest). A dirty one is reported with
// Dirty set and ErrSchemaDirty, whose text says what to do. Errors:
// store.ErrNotHerald, journal.ErrInvalid (url), ErrUnavailable.
func MigrationStatus(ctx context.Context, url string) (SchemaStatus, error) {
	return withPool(ctx, url, func(pool *pgxpool.Pool) (SchemaStatus, error) {
		st, err := readStatus(ctx, pool)
		if err == nil && st.Dirty {
			err = prefixed(schema.Check(st.Current, true))
		}
		return st, err
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
		return SchemaStatus{}, fmt.Errorf("postgres: migrate: %w", context.DeadlineExceeded)
	}
	params := map[string]string{"lock_timeout": strconv.FormatInt(max(wait.Milliseconds(), 1), 10)}
	pool, err := newPool(ctx, url, params)
	if err != nil {
		return SchemaStatus{}, err
	}
	defer pool.Close()
	return fn(pool)
}

// beginMigration begins internal/migrate's transactions on pool, each
// holding the migration lock.
func beginMigration(pool *pgxpool.Pool, op string) migrate.Begin {
	return func(ctx context.Context) (migrate.Tx, error) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return nil, dbError(ctx, op, err)
		}
		if _, err := tx.Exec(ctx, sqlMigrationLock); err != nil {
			_ = tx.Rollback(ctx)
			return nil, migrationError(ctx, op+": wait for the migration lock", err)
		}
		return migrationTx{tx: tx, op: op}, nil
	}
}

// migrationTx is internal/migrate's transaction on PostgreSQL.
type migrationTx struct {
	tx pgx.Tx
	op string
}

func (t migrationTx) Version(ctx context.Context) (int, bool, error) {
	_, v, dirty, err := readVersion(ctx, t.tx)
	return v, dirty, err
}

func (t migrationTx) Apply(ctx context.Context, what, sql string, version int) error {
	op := t.op + ", " + what
	// No arguments: pgx sends the file in the simple protocol, which runs
	// its many statements.
	if _, err := t.tx.Exec(ctx, sql); err != nil {
		return migrationError(ctx, op, err)
	}
	for _, q := range []string{sqlCreateVersions, sqlClearVersion} {
		if _, err := t.tx.Exec(ctx, q); err != nil {
			return migrationError(ctx, op, err)
		}
	}
	if version > 0 {
		if _, err := t.tx.Exec(ctx, sqlRecordVersion, version); err != nil {
			return migrationError(ctx, op, err)
		}
	}
	return nil
}

func (t migrationTx) Commit(ctx context.Context) error {
	return migrationError(ctx, t.op, t.tx.Commit(ctx))
}

func (t migrationTx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

// migrationError is dbError that says what an expired lock_timeout means
// here.
func migrationError(ctx context.Context, op string, err error) error {
	err = dbError(ctx, op, err)
	var he *Error
	if errors.As(err, &he) && he.SQLState == lockNotAvailable {
		he.Message = "gave up waiting for a lock (PostgreSQL lock_timeout): another herald migrate, " +
			"or a long transaction on herald's tables, holds it: " + he.Message
	}
	return err
}

// prefixed names the package in an error of internal/migrate's or of
// readVersion's; the package's own errors (dbError's) already do.
func prefixed(err error) error {
	if err == nil || strings.HasPrefix(err.Error(), "postgres: ") {
		return err
	}
	return fmt.Errorf("postgres: %w", err)
}

// rowQuerier is a pool or a transaction.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readVersion reads the database's name and schema version through q,
// changing nothing. Errors: store.ErrNotHerald, or the database's failure.
func readVersion(ctx context.Context, q rowQuerier) (database string, version int, dirty bool, err error) {
	var tableExists, shaped, heraldTables bool
	if err := q.QueryRow(ctx, sqlSchemaProbe, versionTable).Scan(&database, &tableExists, &shaped, &heraldTables); err != nil {
		return "", 0, false, dbError(ctx, "check schema version", err)
	}
	switch {
	case !tableExists && heraldTables:
		return "", 0, false, fmt.Errorf("the database has herald tables but no %s table recording their version: %w", versionTable, store.ErrNotHerald)
	case !tableExists:
		return database, 0, false, nil
	case !shaped:
		return "", 0, false, fmt.Errorf("table %s is not a herald version table (version bigint, dirty boolean): %w", versionTable, store.ErrNotHerald)
	}
	var v int64
	err = q.QueryRow(ctx, sqlCurrentVersion).Scan(&v, &dirty)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return database, 0, false, nil
	case err != nil:
		return "", 0, false, dbError(ctx, "check schema version", err)
	}
	return database, int(max(v, 0)), dirty, nil // golang-migrate's "no version" is -1
}

// readStatus is the status of the database behind pool, changing nothing.
func readStatus(ctx context.Context, pool *pgxpool.Pool) (SchemaStatus, error) {
	database, v, dirty, err := readVersion(ctx, pool)
	if err != nil {
		return SchemaStatus{}, prefixed(err)
	}
	return schema.Status(database, v, dirty), nil
}

// readSchema is readStatus that refuses a dirty or newer schema.
func readSchema(ctx context.Context, pool *pgxpool.Pool) (SchemaStatus, error) {
	st, err := readStatus(ctx, pool)
	if err != nil {
		return SchemaStatus{}, err
	}
	if err := schema.Check(st.Current, st.Dirty); err != nil {
		return SchemaStatus{}, prefixed(err)
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
	case st.Current == 0:
		return fmt.Errorf("postgres: the database has no herald schema (version 0, this herald needs %d): %w", st.Latest, store.ErrSchemaBehind)
	case st.Current < st.Latest:
		return fmt.Errorf("postgres: the database schema is version %d, this herald needs %d: %w", st.Current, st.Latest, store.ErrSchemaBehind)
	}
	return nil
}
