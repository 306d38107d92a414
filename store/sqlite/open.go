package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/heraldpush/herald/internal/migrate"
	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store"
)

// busyTimeoutMillis is how long a connection waits for another process's
// lock before the call fails: far longer than any herald transaction takes.
const busyTimeoutMillis = 10000

// syncFull is the write connection's PRAGMA synchronous (package doc,
// "Durability"); benchmarks compare it with NORMAL.
const syncFull = "FULL"

// walSizeLimit bounds the -wal file left after a checkpoint (64 MiB): one
// large batch must not leave a WAL that size on disk for good.
const walSizeLimit = 64 << 20

// fileKind is what inspect found at a path.
type fileKind int

const (
	fileMissing fileKind = iota // nothing there: a new database
	fileEmpty                   // a zero-length file: SQLite treats it as a new database
	fileSQLite                  // an SQLite database, herald's or not (inspectSchema decides)
)

// sqliteMagic opens every SQLite database file (the header string).
var sqliteMagic = []byte("SQLite format 3\x00")

// inspect looks at path without changing it: what is there and, for an
// SQLite file, its schema state. Errors: a directory, an unreadable file, one
// that is not SQLite or not herald's (store.ErrNotHerald).
func inspect(ctx context.Context, path string) (fileKind, schemaState, error) {
	if path == "" {
		return 0, schemaState{}, fmt.Errorf("sqlite: open: the database path is empty")
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if dir := filepath.Dir(path); dir != "." {
			if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
				return 0, schemaState{}, fmt.Errorf("sqlite: open %s: the folder %s does not exist (%w): create it, or name a file in a folder that does", path, dir, fs.ErrNotExist)
			}
		}
		return fileMissing, schemaState{}, nil
	case err != nil:
		return 0, schemaState{}, fmt.Errorf("sqlite: open %s: %w", path, err)
	case fi.IsDir():
		return 0, schemaState{}, fmt.Errorf("sqlite: open %s: it is a directory, not a database file", path)
	case !fi.Mode().IsRegular():
		return 0, schemaState{}, fmt.Errorf("sqlite: open %s: it is not a regular file (%v)", path, fi.Mode().Type())
	case fi.Size() == 0:
		return fileEmpty, schemaState{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, schemaState{}, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, schemaState{}, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if !bytes.Equal(head, sqliteMagic) {
		return 0, schemaState{}, fmt.Errorf("sqlite: open %s: %w: the file is not an SQLite database", path, store.ErrNotHerald)
	}
	st, err := inspectSchema(ctx, path)
	return fileSQLite, st, err
}

// inspectSchema reads the schema state of the SQLite database at path,
// read-only: immutable=1 at rest (no -wal file), so that no lock is taken nor
// file made beside one that may not be ours. Such a read can see a file being
// created show its tables before its application id, so a refusal is read
// again through the WAL once there is one (herald's first write makes it).
func inspectSchema(ctx context.Context, path string) (schemaState, error) {
	_, walErr := os.Stat(path + "-wal")
	immutable := errors.Is(walErr, fs.ErrNotExist)
	st, err := readStateAt(ctx, path, immutable)
	if err != nil && immutable {
		if _, walErr := os.Stat(path + "-wal"); walErr == nil {
			st, err = readStateAt(ctx, path, false)
		}
	}
	return st, err
}

// readStateAt reads the schema state of the file at path in one read-only
// transaction (one snapshot, under the file's shared lock unless immutable).
func readStateAt(ctx context.Context, path string, immutable bool) (st schemaState, err error) {
	err = readAt(ctx, path, immutable, func(tx *sql.Tx) error {
		if st, err = readState(ctx, tx); err != nil || st.version != schema.Latest() || st.dirty {
			return err
		}
		return checkShape(ctx, tx)
	})
	return st, err
}

// buildShape is the shape (sqlSchemaShape) this build's migrations make,
// read from a database in memory once a process.
var buildShape = sync.OnceValues(func() ([]string, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, driverError(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // each connection to :memory: is a database of its own
	for _, f := range schema.Files {
		if _, err := db.Exec(f.Up); err != nil {
			return nil, fmt.Errorf("migration %03d_%s in memory: %w", f.Version, f.Name, driverError(err))
		}
	}
	return queryAll(context.Background(), db, "read the schema", nil, scanString, sqlSchemaShape)
})

func scanString(sc scanner) (string, error) {
	var s string
	err := sc.Scan(&s)
	return s, err
}

// checkShape refuses (store.ErrSchemaOtherBuild) a schema at this build's
// version that lacks what its migrations make, or has columns they do not,
// naming what differs. An index, trigger or table of its own that an
// operator (or a test) added is no other build's.
func checkShape(ctx context.Context, q queryer) error {
	want, err := buildShape()
	if err != nil {
		return err
	}
	got, err := queryAll(ctx, q, "read the schema", nil, scanString, sqlSchemaShape)
	if err != nil {
		return err
	}
	var diffs []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			diffs = append(diffs, "lacks "+w)
		}
	}
	for _, g := range got {
		if strings.HasPrefix(g, "column ") && !slices.Contains(want, g) {
			diffs = append(diffs, "has "+g)
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("%d more", len(diffs)-3))
	}
	return fmt.Errorf("its schema is version %d, as this build's, but %s: %w", schema.Latest(), strings.Join(diffs, "; "), store.ErrSchemaOtherBuild)
}

// readAt runs read in one read-only transaction on the file at path.
func readAt(ctx context.Context, path string, immutable bool, read func(*sql.Tx) error) error {
	params := []string{"_query_only=1"}
	if immutable {
		params = append(params, "immutable=1")
	}
	db, err := openDB(ctx, path, dsn(path, "ro", params...), 1)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("sqlite: open %s: begin a read: %w", path, driverError(err))
	}
	defer tx.Rollback() //nolint:errcheck // a read: nothing to keep
	if err := read(tx); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return nil
}

// SealedKeyID returns the key id of a value sealed in the herald database
// at path (a config or an actor key), "" when it holds none or is new,
// reading it as Open inspects it, without changing it. A database that
// holds one but has no key file beside it was copied without the file: a
// new key there would seal new secrets apart from the old.
func SealedKeyID(ctx context.Context, path string) (id string, err error) {
	kind, st, err := inspect(ctx, path)
	if err != nil || kind != fileSQLite || st.version == 0 {
		return "", err
	}
	_, walErr := os.Stat(path + "-wal")
	err = readAt(ctx, path, errors.Is(walErr, fs.ErrNotExist), func(tx *sql.Tx) error {
		var v []byte
		err := tx.QueryRowContext(ctx, stmt("any_sealed"), []byte(seal.Prefix)).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return fmt.Errorf("look for a sealed value: %w", driverError(err))
		}
		id, _ = seal.KeyID(v)
		return nil
	})
	return id, err
}

// dsn builds a "file:" URI for the driver: the path escaped, SQLite's own
// mode parameter, the busy timeout and the driver's underscore parameters.
func dsn(path, mode string, params ...string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	if runtime.GOOS == "windows" {
		u.Path = "/" + u.Path
	}
	q := append([]string{"mode=" + mode, fmt.Sprintf("_busy_timeout=%d", busyTimeoutMillis)}, params...)
	return u.String() + "?" + strings.Join(q, "&")
}

// writerDSN: the single write connection. BEGIN IMMEDIATE takes the write
// lock when a transaction starts, never midway (where a busy wait could not
// help); foreign keys serve the evidence cascade.
func writerDSN(path, sync string) string {
	return dsn(path, "rwc", "_txlock=immediate", "_foreign_keys=1", "_synchronous="+sync,
		fmt.Sprintf("_pragma=journal_size_limit(%d)", walSizeLimit))
}

// readerDSN: a read pool connection, query_only against a stray write.
func readerDSN(path string) string { return dsn(path, "rw", "_query_only=1") }

// openDB opens a pool of conns connections on dsn and checks it connects.
func openDB(ctx context.Context, path, dsn string, conns int) (*sql.DB, error) {
	c, err := newConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, driverError(err))
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, driverError(err))
	}
	return db, nil
}

// setWAL switches the database to write-ahead logging, which persists in
// the file. SQLite refuses the switch at once, without its busy handler,
// while another process opening the new file holds a read lock on it, so it
// is tried again every few milliseconds for up to the busy timeout.
func setWAL(ctx context.Context, db *sql.DB) error {
	var mode string
	deadline := time.Now().Add(busyTimeoutMillis * time.Millisecond)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := db.QueryRowContext(ctx, sqlWAL).Scan(&mode)
		if err == nil {
			break
		}
		if err := translate("enable WAL", err); !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sqlite: enable WAL: %w", ctx.Err())
		case <-time.After(pause):
		}
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("sqlite: enable WAL: the database stayed in %q mode", mode)
	}
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// applicationID is herald's mark in the SQLite header (PRAGMA
// application_id): the bytes "HRLD". A file without it must be empty (a new
// database), or it is refused.
const applicationID = 0x48524c44

// migrationsTable records the version, in golang-migrate's shape.
const migrationsTable = "schema_migrations"

// schema is the embedded migrations.
var schema = migrate.MustLoad(migrationFiles, "migrations", migrationsTable)

// MigrateUp applies every pending migration to the database at path, creating
// the file if it does not exist, and returns the status after. Errors: the
// refusals (package doc), which change nothing; ErrBusy; the failure to open
// or write the file.
func MigrateUp(ctx context.Context, path string) (store.SchemaStatus, error) {
	return migrateFile(ctx, path, true)
}

// MigrateDown reverts the newest applied migration of the database at path
// (one step) and returns the status after. Reverting drops tables and the
// data in them; version 0 is left alone. Errors: as MigrateUp, and
// fs.ErrNotExist for a path with no file.
func MigrateDown(ctx context.Context, path string) (store.SchemaStatus, error) {
	return migrateFile(ctx, path, false)
}

// MigrationStatus reports where the schema of the database at path stands,
// changing nothing (no file is reported at version 0, and not created). A
// newer schema is reported, not refused (Current > Latest); a dirty one with
// Dirty set and store.ErrSchemaDirty, whose text says what to do. Errors:
// store.ErrNotHerald, or the failure to read the file.
func MigrationStatus(ctx context.Context, path string) (store.SchemaStatus, error) {
	_, st, err := inspect(ctx, path)
	if err != nil {
		return store.SchemaStatus{}, err
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
	names, err := queryAll(ctx, q, "list tables", nil, scanString, sqlTableNames)
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

// migrateFile checks the file without changing it and, when there is
// something to do, migrates it up to the latest version, or down one step.
func migrateFile(ctx context.Context, path string, up bool) (store.SchemaStatus, error) {
	kind, st, err := inspect(ctx, path)
	if err != nil {
		return store.SchemaStatus{}, err
	}
	if !up && kind == fileMissing {
		return store.SchemaStatus{}, fmt.Errorf("sqlite: migrate down %s: %w", path, fs.ErrNotExist)
	}
	if err := schema.Check(st.version, st.dirty); err != nil {
		return store.SchemaStatus{}, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	pending := st.version < schema.Latest()
	if !up {
		pending = st.version > 0
	}
	if kind != fileMissing && !pending {
		return schema.Status(path, st.version, false), nil // nothing to do: the file is not even opened for writing
	}
	if kind == fileMissing {
		// Readable by its owner only, as SQLite makes its -wal and -shm
		// files beside it: a database holds secrets, sealed or not.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil && !errors.Is(err, fs.ErrExist) { // another process made it first: its mode stands
			return store.SchemaStatus{}, fmt.Errorf("sqlite: create %s: %w", path, err)
		}
		if f != nil {
			f.Close()
		}
	}
	db, err := openDB(ctx, path, writerDSN(path, syncFull), 1)
	if err != nil {
		return store.SchemaStatus{}, err
	}
	defer db.Close()
	// Pages freed by pruning go back to the file system a batch at a time
	// (Prune's incremental vacuum); this takes effect only in a file without
	// tables yet: before the first migration.
	if _, err = db.ExecContext(ctx, sqlAutoVacuum); err != nil {
		return store.SchemaStatus{}, fmt.Errorf("sqlite: open %s: %w", path, translate("set auto_vacuum", err))
	}
	if err := setWAL(ctx, db); err != nil {
		return store.SchemaStatus{}, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
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
		return store.SchemaStatus{}, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}
	return schema.Status(path, v, false), nil
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
