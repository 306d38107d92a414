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

//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable records the schema version in golang-migrate's shape.
const versionTable = "herald_schema_migrations"

var schema = migrate.MustLoad(migrationFiles, "migrations", versionTable)

// lockWait bounds a migration's wait for a lock (lock_timeout) unless ctx's
// deadline comes first: herald's migrations take well under a second, and
// waiting longer on a stuck process would queue herald's traffic behind.
const lockWait = 2 * time.Minute

// MigrateUp applies every pending migration to the database at url (a
// postgres:// URL or key=value connection string) and returns the status
// after. A concurrent MigrateUp waits for this one (up to two minutes, or
// ctx's deadline), then finds nothing to do. Errors: store.ErrNotHerald,
// store.ErrSchemaAhead and store.ErrSchemaDirty, changing nothing;
// journal.ErrInvalid (url); ErrUnavailable; a failed migration, rolled back
// whole, as an *Error with the server's message.
func MigrateUp(ctx context.Context, url string) (store.SchemaStatus, error) {
	return withPool(ctx, url, func(pool *pgxpool.Pool) (store.SchemaStatus, error) {
		if _, err := schema.Up(ctx, beginMigration(pool, "migrate up")); err != nil {
			return store.SchemaStatus{}, prefixed(err)
		}
		return readStatus(ctx, pool, true)
	})
}

// MigrateDown reverts the newest applied migration of the database at url
// (one step) and returns the status after. Reverting drops tables and their
// data; version 0 is left alone. Errors: as MigrateUp's.
func MigrateDown(ctx context.Context, url string) (store.SchemaStatus, error) {
	return withPool(ctx, url, func(pool *pgxpool.Pool) (store.SchemaStatus, error) {
		st, err := readStatus(ctx, pool, true)
		if err != nil || st.Current == 0 {
			return st, err
		}
		if _, err := schema.Down(ctx, beginMigration(pool, "migrate down"), st.Current); err != nil {
			return store.SchemaStatus{}, prefixed(err)
		}
		return readStatus(ctx, pool, true)
	})
}

// MigrationStatus reports where the schema of the database at url stands,
// changing nothing (not even creating the version table). A newer schema is
// reported (Current > Latest); a dirty one with Dirty set and
// store.ErrSchemaDirty, whose text says what to do. Errors:
// store.ErrNotHerald, journal.ErrInvalid (url), ErrUnavailable.
func MigrationStatus(ctx context.Context, url string) (store.SchemaStatus, error) {
	return withPool(ctx, url, func(pool *pgxpool.Pool) (store.SchemaStatus, error) {
		st, err := readStatus(ctx, pool, false)
		if err == nil && st.Dirty {
			err = prefixed(schema.Check(st.Current, true))
		}
		return st, err
	})
}

// withPool runs fn with a pool of its own on url, waiting at most lockWait.
func withPool(ctx context.Context, url string, fn func(*pgxpool.Pool) (store.SchemaStatus, error)) (store.SchemaStatus, error) {
	wait := lockWait
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(deadline))
	}
	if wait <= 0 {
		return store.SchemaStatus{}, fmt.Errorf("postgres: migrate: %w", context.DeadlineExceeded)
	}
	pool, err := newPool(ctx, url, map[string]string{"lock_timeout": strconv.FormatInt(max(wait.Milliseconds(), 1), 10)})
	if err != nil {
		return store.SchemaStatus{}, err
	}
	defer pool.Close()
	return fn(pool)
}

// beginMigration begins internal/migrate's transactions, each under the lock.
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
		return migrationTx{Tx: tx, op: op}, nil
	}
}

type migrationTx struct {
	pgx.Tx
	op string
}

func (t migrationTx) Version(ctx context.Context) (int, bool, error) {
	_, v, dirty, err := readVersion(ctx, t.Tx)
	return v, dirty, err
}

func (t migrationTx) Apply(ctx context.Context, what, sql string, version int) error {
	// Without arguments pgx sends the file in the simple protocol, which
	// runs its many statements.
	for _, q := range []string{sql, sqlCreateVersions, sqlClearVersion} {
		if _, err := t.Exec(ctx, q); err != nil {
			return migrationError(ctx, t.op+", "+what, err)
		}
	}
	if version == 0 {
		return nil
	}
	_, err := t.Exec(ctx, sqlRecordVersion, version)
	return migrationError(ctx, t.op+", "+what, err)
}

func (t migrationTx) Commit(ctx context.Context) error {
	return migrationError(ctx, t.op, t.Tx.Commit(ctx))
}

// migrationError is dbError that says what an expired lock_timeout means.
func migrationError(ctx context.Context, op string, err error) error {
	err = dbError(ctx, op, err)
	var he *Error
	if errors.As(err, &he) && he.SQLState == "55P03" { // lock_not_available
		he.Message = "gave up waiting for a lock (PostgreSQL lock_timeout): another herald migrate, " +
			"or a long transaction on herald's tables, holds it: " + he.Message
	}
	return err
}

// prefixed names the package in an error that does not yet.
func prefixed(err error) error {
	if err == nil || strings.HasPrefix(err.Error(), "postgres: ") {
		return err
	}
	return fmt.Errorf("postgres: %w", err)
}

// readVersion reads the database's name and schema version, changing
// nothing. Errors: store.ErrNotHerald, or the database's failure.
func readVersion(ctx context.Context, q querier) (database string, version int, dirty bool, err error) {
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

// readStatus reads the schema's status; with check, it refuses a dirty or
// newer one.
func readStatus(ctx context.Context, pool *pgxpool.Pool, check bool) (store.SchemaStatus, error) {
	database, v, dirty, err := readVersion(ctx, pool)
	if err == nil && check {
		err = schema.Check(v, dirty)
	}
	if err != nil {
		return store.SchemaStatus{}, prefixed(err)
	}
	return schema.Status(database, v, dirty), nil
}
