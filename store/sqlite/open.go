package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/heraldpush/herald/store"
)

// busyTimeoutMillis is how long a connection waits for a lock that another
// process holds (a `herald unpark` beside a running daemon, say) before the
// call fails: 10 s, far longer than any one herald transaction takes.
const busyTimeoutMillis = 10000

// syncFull is the write connection's PRAGMA synchronous (package doc,
// "Durability"); benchmarks compare it with NORMAL.
const syncFull = "FULL"

// walSizeLimit bounds the -wal file left after a checkpoint (64 MiB): one
// large batch must not leave a WAL that size on disk for good.
const walSizeLimit = 64 << 20

// fileKind is what inspectFile found at a path.
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
	kind, err := inspectFile(path)
	if err != nil || kind != fileSQLite {
		return kind, schemaState{}, err
	}
	st, err := inspectSchema(ctx, path)
	return kind, st, err
}

func inspectFile(path string) (fileKind, error) {
	if path == "" {
		return 0, fmt.Errorf("sqlite: open: the database path is empty")
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if dir := filepath.Dir(path); dir != "." {
			if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
				return 0, fmt.Errorf("sqlite: open %s: the folder %s does not exist (%w): create it, or name a file in a folder that does", path, dir, fs.ErrNotExist)
			}
		}
		return fileMissing, nil
	case err != nil:
		return 0, fmt.Errorf("sqlite: open %s: %w", path, err)
	case fi.IsDir():
		return 0, fmt.Errorf("sqlite: open %s: it is a directory, not a database file", path)
	case !fi.Mode().IsRegular():
		return 0, fmt.Errorf("sqlite: open %s: it is not a regular file (%v)", path, fi.Mode().Type())
	case fi.Size() == 0:
		return fileEmpty, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if !bytes.Equal(head, sqliteMagic) {
		return 0, fmt.Errorf("sqlite: open %s: %w: the file is not an SQLite database", path, store.ErrNotHerald)
	}
	return fileSQLite, nil
}

// inspectSchema reads the schema state of the SQLite database at path
// through a read-only connection: with immutable=1 when it is at rest (no
// -wal file), so that no lock is taken and no -wal or -shm file made beside a
// file that may not be ours. Such a read can see a process that is creating
// the file show its first tables before its application id, so a refusal
// is read again through the WAL once the file is in use (herald's first
// write makes a -wal file).
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
func readStateAt(ctx context.Context, path string, immutable bool) (schemaState, error) {
	params := []string{"_query_only=1"}
	if immutable {
		params = append(params, "immutable=1")
	}
	db, err := openDB(ctx, path, dsn(path, "ro", params...), 1)
	if err != nil {
		return schemaState{}, err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return schemaState{}, fmt.Errorf("sqlite: open %s: begin a read: %w", path, driverError(err))
	}
	defer tx.Rollback() //nolint:errcheck // a read: nothing to keep
	st, err := readState(ctx, tx)
	if err != nil {
		return schemaState{}, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return st, nil
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

// readerDSN: a read pool connection; query_only guards against a write
// slipping onto it.
func readerDSN(path string) string { return dsn(path, "rw", "_query_only=1") }

// openDB opens a pool of conns connections on dsn and checks that it
// connects.
func openDB(ctx context.Context, path, dsn string, conns int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, driverError(err))
	}
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
