package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

var (
	_ journal.Journal = (*Store)(nil)
	_ push.Store      = (*Store)(nil)
)

// readers is the size of the read pool: WAL lets readers run beside the
// writer and each other, and a sweep's turns read the journal in parallel.
const readers = 4

// Store is a herald journal and push store in one SQLite file. It is safe for
// concurrent use by many goroutines; see the package documentation for how
// writes are serialised.
type Store struct {
	path       string
	w          *sql.DB // one connection: every write, in BEGIN IMMEDIATE transactions
	r          *sql.DB // the read pool (query_only connections)
	now        func() time.Time
	maxPayload int

	pruneMu   sync.Mutex // one Prune at a time: they share pruneFrom
	pruneFrom string     // the stream the next Prune starts at ("" = the first)
}

type config struct {
	now        func() time.Time
	maxPayload int
	sync       string
	noMigrate  bool
}

// Option configures Open.
type Option func(*config)

// WithClock sets the clock that stamps Record.AppendedAt (default time.Now).
// Nothing else in the store reads a clock: every other instant is the
// caller's.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithoutMigrating makes Open use only a database that is there and up to
// date, for a caller that must not change the file's schema (herald's
// read-only commands): a path with no file, or an empty one, is refused
// with an error wrapping fs.ErrNotExist (nothing is created), and a schema
// behind this binary's with store.ErrSchemaBehind (nothing is migrated).
func WithoutMigrating() Option { return func(c *config) { c.noMigrate = true } }

// WithMaxPayload sets the payload limit of Append in bytes (default
// journal.DefaultMaxPayload; 0 means the default).
func WithMaxPayload(n int) Option { return func(c *config) { c.maxPayload = n } }

// Open opens the herald database at path (a file name, not a URI), creating
// and migrating it when the file does not exist or is empty. A herald
// database whose schema is behind this binary's is migrated up at once (the
// embedded default must just work; `herald migrate status` shows what ran).
//
// Each migration takes the write lock, as any write does: it waits up to
// the busy timeout (10 s) for another process's write, then fails with
// ErrBusy.
//
// Open changes nothing, and returns an error, when path is not a herald
// database: store.ErrNotHerald for a file that is not SQLite or holds another
// application's schema, store.ErrSchemaAhead for a database migrated by a
// newer herald, ErrSchemaDirty for one in which a migration did not finish
// (the error says how to settle it), and an error naming the path for a
// directory or a file that cannot be read or written.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := config{now: time.Now, maxPayload: journal.DefaultMaxPayload, sync: syncFull}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case cfg.now == nil:
		return nil, journal.Invalid("clock", "is nil")
	case cfg.maxPayload < 0:
		return nil, journal.Invalid("max payload", "is %d bytes: it must not be negative", cfg.maxPayload)
	case cfg.maxPayload == 0:
		cfg.maxPayload = journal.DefaultMaxPayload
	}
	if cfg.noMigrate {
		if err := checkCurrent(ctx, path); err != nil {
			return nil, err
		}
	} else if _, err := migrateFile(ctx, path, true); err != nil {
		return nil, err
	}
	w, err := openDB(path, writerDSN(path, cfg.sync))
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Store, error) {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := setWAL(ctx, w); err != nil {
		return fail(err)
	}
	// Another process may have stepped the schema down since it was
	// migrated: the write connection checks what it opened.
	st, err := readState(ctx, w)
	if err != nil {
		return fail(err)
	}
	if err := schema.Check(st.version, st.dirty); err != nil {
		return fail(err)
	}
	if st.version != schema.Latest() {
		return fail(fmt.Errorf("%w: at version %d after migrating, want %d", store.ErrSchemaBehind, st.version, schema.Latest()))
	}
	r, err := sql.Open("sqlite", readerDSN(path))
	if err != nil {
		return fail(translate("open read pool", err))
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	if err := r.PingContext(ctx); err != nil {
		r.Close()
		return fail(translate("open read pool", err))
	}
	return &Store{path: path, w: w, r: r, now: cfg.now, maxPayload: cfg.maxPayload}, nil
}

// checkCurrent refuses, without changing anything, a path that holds no
// database (fs.ErrNotExist) or one that is not herald's current schema.
func checkCurrent(ctx context.Context, path string) error {
	kind, err := inspectFile(path)
	if err != nil {
		return err
	}
	if kind != fileSQLite {
		return fmt.Errorf("sqlite: open %s: %w: there is no herald database at this path", path, fs.ErrNotExist)
	}
	st, err := inspectSchema(ctx, path)
	if err != nil {
		return err
	}
	if err := schema.Check(st.version, st.dirty); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if st.version < schema.Latest() {
		return fmt.Errorf("sqlite: open %s: %w (at version %d of %d)", path, store.ErrSchemaBehind, st.version, schema.Latest())
	}
	return nil
}

// Close closes the database. The last connection to close checkpoints the
// write-ahead log into the database file.
func (s *Store) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Check runs SQLite's integrity and foreign key checks, for an operator after
// a crash or a power loss. It returns nil when both pass, else an error
// listing what they found.
func (s *Store) Check(ctx context.Context) error {
	var problems []string
	for _, q := range []string{sqlIntegrityCheck, sqlForeignKeyCheck} {
		rows, err := s.r.QueryContext(ctx, q)
		if err != nil {
			return translate(q, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return translate(q, err)
			}
			if len(vals) == 1 && fmt.Sprint(vals[0]) == "ok" {
				continue
			}
			problems = append(problems, fmt.Sprint(vals...))
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return translate(q, err)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("sqlite: check %s: %d problems: %v", s.path, len(problems), problems)
	}
	return nil
}

// write runs fn in one write transaction (BEGIN IMMEDIATE on the single
// write connection), committing if fn returns nil. fn returns errors already
// translated; write translates those of BEGIN and COMMIT.
func (s *Store) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	return s.writeNamed(ctx, func() string { return op }, fn)
}

// writeTo is write for one registration: op and its name (push.Name),
// formatted only for an error, off the path of every cursor write.
func (s *Store) writeTo(ctx context.Context, op, stream, id string, fn func(tx *sql.Tx) error) error {
	return s.writeNamed(ctx, func() string { return op + " " + push.Name(stream, id) }, fn)
}

// writeNamed is write with the name of its work made by name, only when
// an error needs it.
func (s *Store) writeNamed(ctx context.Context, name func() string, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return translate(name(), err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return translate(name(), err)
	}
	return nil
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
