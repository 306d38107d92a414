package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store"
)

var (
	_ store.Backend  = (*Store)(nil)
	_ store.Resealer = (*Store)(nil)
)

// readers is the size of the read pool: WAL lets readers run beside the
// writer and each other, and a sweep's turns read the journal in parallel.
const readers = 4

// Store is a herald journal and push store in one SQLite file, safe for
// concurrent use (package doc, "Concurrency").
type Store struct {
	w *sql.DB // one connection: every write, in BEGIN IMMEDIATE transactions
	r *sql.DB // the read pool (query_only connections)
	// readPage is statement read prepared on r: a turn reads a page at a time, and
	// parsing the page's query took as long as running it.
	readPage *sql.Stmt
	now      func() time.Time
	sealer   store.Sealer // seals and opens registrations' configs

	pruneMu   sync.Mutex // one Prune at a time: they share pruneFrom
	pruneFrom string     // the stream the next Prune starts at ("" = the first)
}

type config struct {
	now       func() time.Time
	sync      string
	noMigrate bool
	keyring   *seal.Keyring
}

// Option configures Open.
type Option func(*config)

// WithClock sets the clock that stamps Record.AppendedAt (default time.Now),
// the one instant the store does not take from its caller.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithoutMigrating makes Open refuse to change the file's schema, for
// herald's read-only commands: a path with no file, or an empty one, is
// refused with an error wrapping fs.ErrNotExist, a schema behind this
// binary's with store.ErrSchemaBehind.
func WithoutMigrating() Option { return func(c *config) { c.noMigrate = true } }

// WithKeyring seals every registration's config under keyring (package
// seal; store.Sealer). Without one, configs are kept as given and a sealed
// one does not open.
func WithKeyring(keyring *seal.Keyring) Option { return func(c *config) { c.keyring = keyring } }

// Open opens the herald database at path (a file name, not a URI), creating
// it if the file does not exist or is empty, and migrating it up. It changes
// nothing, and returns an error, for a path that is not a herald database
// (package doc, "Migrations and refusals"), a directory or file that cannot
// be read or written, or ErrBusy. A nil clock is journal.ErrInvalid.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := config{now: time.Now, sync: syncFull}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.now == nil {
		return nil, journal.Invalid("clock", "is nil")
	}
	if cfg.noMigrate {
		if err := checkCurrent(ctx, path); err != nil {
			return nil, err
		}
	} else if _, err := migrateFile(ctx, path, true); err != nil {
		return nil, err
	}
	w, err := openDB(ctx, path, writerDSN(path, cfg.sync), 1)
	if err != nil {
		return nil, err
	}
	// Another process may have stepped the schema down since it was
	// migrated: the write connection checks what it opened.
	var st schemaState
	if err = setWAL(ctx, w); err == nil {
		st, err = readState(ctx, w)
	}
	if err == nil {
		err = schema.Check(st.version, st.dirty)
	}
	if err == nil && st.version != schema.Latest() {
		err = fmt.Errorf("%w: at version %d after migrating, want %d", store.ErrSchemaBehind, st.version, schema.Latest())
	}
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r, err := openDB(ctx, path, readerDSN(path), readers)
	if err != nil {
		w.Close()
		return nil, err
	}
	readPage, err := r.PrepareContext(ctx, stmt("read"))
	if err != nil {
		r.Close()
		w.Close()
		return nil, translate("prepare the read of a page", err)
	}
	return &Store{w: w, r: r, readPage: readPage, now: cfg.now, sealer: store.Sealer{Keyring: cfg.keyring}}, nil
}

// checkCurrent refuses, without changing anything, a path that holds no
// database (fs.ErrNotExist) or one that is not herald's current schema.
func checkCurrent(ctx context.Context, path string) error {
	kind, st, err := inspect(ctx, path)
	switch {
	case err != nil:
		return err
	case kind != fileSQLite:
		return fmt.Errorf("sqlite: open %s: %w: there is no herald database at this path", path, fs.ErrNotExist)
	case st.version < schema.Latest():
		return fmt.Errorf("sqlite: open %s: %w (at version %d of %d)", path, store.ErrSchemaBehind, st.version, schema.Latest())
	}
	return nil
}

// Close closes the database. The last connection to close checkpoints the
// write-ahead log into the database file.
func (s *Store) Close() error {
	return errors.Join(s.readPage.Close(), s.r.Close(), s.w.Close())
}

// write runs fn in one write transaction (BEGIN IMMEDIATE on the single
// write connection), committing if fn returns nil. fn returns errors already
// translated; write translates those of BEGIN and COMMIT.
func (s *Store) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	return s.writeNamed(ctx, func() string { return op }, fn)
}

// writeTo is write for op on registration stream/id, named only for an error.
func (s *Store) writeTo(ctx context.Context, op, stream, id string, fn func(tx *sql.Tx) error) error {
	return s.writeNamed(ctx, func() string { return op + " " + store.Name(stream, id) }, fn)
}

// writeNamed is write that calls name only for an error.
func (s *Store) writeNamed(ctx context.Context, name func() string, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return translate(name(), err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return translate(name(), tx.Commit())
}

// read runs fn in one read transaction on the read pool: one snapshot.
func (s *Store) read(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return translate(op, err)
	}
	defer tx.Rollback()
	return fn(tx)
}

// queryer is what reads run on: the read pool, or a transaction.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// scanner is a row to scan: *sql.Row or *sql.Rows.
type scanner interface{ Scan(...any) error }

// queryAll appends to out every row of query, scanned by scan; op names the
// work in errors.
func queryAll[T any](ctx context.Context, q queryer, op string, out []T, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	return scanAll(rows, err, op, out, scan)
}

// scanAll appends the rows of a query that returned err to out.
func scanAll[T any](rows *sql.Rows, err error, op string, out []T, scan func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, translate(op, err)
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, translate(op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(op, err)
	}
	return out, nil
}

// ErrBusy is returned when another process held the database's write lock
// for longer than the busy timeout (package doc, "Concurrency").
var ErrBusy = errors.New("the database is busy: another process held its write lock for more than 10s")

// translate wraps err with op, a driver error translated (package doc, end).
func translate(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sqlite: %s: %w", op, driverError(err))
}

// driverError is translate without the operation.
func driverError(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	msg := se.Error()
	switch se.Code() & 0xff { // the primary result code
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return ErrBusy
	case sqlite3.SQLITE_INTERRUPT:
		return context.Canceled
	case sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: the file is not an SQLite database", store.ErrNotHerald)
	case sqlite3.SQLITE_CONSTRAINT:
		if se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
			return fmt.Errorf("%w: %s", journal.ErrConflict, msg)
		}
		return fmt.Errorf("constraint failed: %s", msg)
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("the disk is full: %s", msg)
	case sqlite3.SQLITE_CORRUPT:
		return fmt.Errorf("the database file is corrupt: %s", msg)
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_AUTH:
		return fmt.Errorf("cannot open or write the database file: %s", msg)
	}
	return fmt.Errorf("%s", msg)
}

// The instants an int64 of nanoseconds holds (package doc): years 1678 to 2262.
var (
	minTime = time.Unix(0, math.MinInt64+1).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// dueNow is the wake_at that makes a stream due at any instant.
const dueNow = math.MinInt64

// nanos converts t for storage. field names it in the error.
func nanos(field string, t time.Time) (sql.NullInt64, error) {
	if t.IsZero() {
		return sql.NullInt64{}, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return sql.NullInt64{}, journal.Invalid(field, "%v is outside the instants the store keeps (%d to %d)", t, minTime.Year(), maxTime.Year())
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}, nil
}

// instantArg is nanos for an instant that must be set.
func instantArg(field string, t time.Time) (sql.NullInt64, error) {
	if err := store.ValidateInstant(field, t); err != nil {
		return sql.NullInt64{}, err
	}
	return nanos(field, t)
}

// instant converts a stored value back: NULL is the zero time; others are UTC.
func instant(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// seqArg converts a seq or cursor for storage; a seq beyond int64 is bad input.
func seqArg(field string, seq uint64) (int64, error) {
	if seq > math.MaxInt64 {
		return 0, journal.Invalid(field, "is %d: seqs end at %d", seq, int64(math.MaxInt64))
	}
	return int64(seq), nil
}
