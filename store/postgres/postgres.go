package postgres

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store"
)

var (
	_ store.Backend        = (*Store)(nil)
	_ store.AdvanceBatcher = (*Store)(nil)
	_ store.Resealer       = (*Store)(nil)
)

// Store is herald's journal and push store. It is safe for concurrent use,
// and any number of Stores, in any number of processes, may share a database.
type Store struct {
	pool    *pgxpool.Pool
	ownPool bool
	now     func() time.Time

	appended   chan struct{}    // AppendTx pokes RunSequencer
	sequencing atomic.Int32     // RunSequencer loops running: Due leaves the numbering to them
	ownPID     atomic.Uint32    // backend of RunSequencerWaking's connection (0: none): Listeners skip its notifications
	stepHook   func(pid uint32) // tests: called in a sequencer step before its commit
	page       int              // the most records a step numbers (sequencerPage; tests make it smaller)
	seqBusy    time.Duration    // WithSequencerInterval
	sealer     store.Sealer     // WithKeyring; without one a config holding a secret is refused

	pruneMu   sync.Mutex // one Prune at a time: they share pruneFrom
	pruneFrom string     // the stream the next Prune starts at ("" = the first)
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that stamps Record.AppendedAt (default
// time.Now). Instants are kept to the microsecond, PostgreSQL's precision.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithSequencerInterval sets RunSequencer's longest interval while records
// keep coming (the most a committed record waits for its seq, plus one step),
// from MinSequencerInterval to MaxSequencerInterval.
func WithSequencerInterval(d time.Duration) Option {
	return func(s *Store) { s.seqBusy = d }
}

// WithKeyring seals every registration's config under keyring (package
// seal; store.Sealer). Without one, a config holding a secret is refused
// (store.ErrNoKeyring) and a sealed one does not open.
func WithKeyring(keyring *seal.Keyring) Option { return func(s *Store) { s.sealer.Keyring = keyring } }

// Open is New on a pool of its own for url, a postgres:// URL or key=value
// connection string (pool_* parameters are pgxpool's). Errors: NewPool's
// and New's.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	pool, err := NewPool(ctx, url)
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownPool = true
	return s, nil
}

// NewPool returns a pgxpool for url, for New, having checked that the server
// answers. Errors: journal.ErrInvalid (url cannot be parsed; the error does
// not repeat it, which may hold a password), ErrUnavailable.
func NewPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	return newPool(ctx, url, nil)
}

// newPool is NewPool with runtime parameters set on every connection.
func newPool(ctx context.Context, url string, params map[string]string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, journal.Invalid("database url", "is not a PostgreSQL connection string (postgres://user@host:port/database)")
	}
	maps.Copy(cfg.ConnConfig.RuntimeParams, params)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		if err = pool.Ping(ctx); err != nil {
			pool.Close()
		}
	}
	if err != nil {
		return nil, dbError(ctx, "connect", err)
	}
	return pool, nil
}

// New returns a Store over pool, which the caller keeps and closes. It refuses
// a database whose schema is not this binary's: errors wrap
// store.ErrSchemaBehind (run `herald migrate up`), store.ErrSchemaAhead,
// store.ErrSchemaDirty, store.ErrNotHerald, or ErrUnavailable.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	if pool == nil {
		return nil, journal.Invalid("pool", "is nil")
	}
	s := &Store{pool: pool, now: time.Now, appended: make(chan struct{}, 1), page: sequencerPage, seqBusy: DefaultSequencerInterval,
		sealer: store.Sealer{Required: true}}
	for _, o := range opts {
		o(s)
	}
	if s.now == nil {
		return nil, journal.Invalid("clock", "is nil")
	}
	if s.seqBusy < MinSequencerInterval || s.seqBusy > MaxSequencerInterval {
		return nil, journal.Invalid("sequencer interval", "is %v: it must be from %v to %v", s.seqBusy, MinSequencerInterval, MaxSequencerInterval)
	}
	switch st, err := readStatus(ctx, pool, true); {
	case err != nil:
		return nil, err
	case st.Current == 0:
		return nil, fmt.Errorf("postgres: the database has no herald schema (version 0, this herald needs %d): %w", st.Latest, store.ErrSchemaBehind)
	case st.Current < st.Latest:
		return nil, fmt.Errorf("postgres: the database schema is version %d, this herald needs %d: %w", st.Current, st.Latest, store.ErrSchemaBehind)
	}
	return s, nil
}

// Pool returns the store's pool, for the caller's transactions (AppendTx).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool if Open made it. It returns nil: the error makes
// every herald store an io.Closer.
func (s *Store) Close() error {
	if s.ownPool {
		s.pool.Close()
	}
	return nil
}

// querier is what a pool, a connection and a transaction share.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// inTx runs fn, which translates its errors, in a transaction of its own.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.dbErr(ctx, op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	return s.dbErr(ctx, op+": commit", tx.Commit(ctx))
}

// onConn runs fn, whose batches begin and commit a transaction, on conn (nil:
// a pooled one), and rolls back, or drops the connection, if fn fails.
func (s *Store) onConn(ctx context.Context, conn *pgx.Conn, op string, fn func(*pgx.Conn) error) error {
	if conn == nil {
		pooled, err := s.pool.Acquire(ctx)
		if err != nil {
			return s.dbErr(ctx, op, err)
		}
		defer pooled.Release()
		conn = pooled.Conn()
	}
	err := fn(conn)
	if err != nil {
		if _, rbErr := conn.Exec(context.WithoutCancel(ctx), stmt("abort")); rbErr != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}
	return err
}

// query runs sql on the pool and appends each row, read by scan, to out.
func query[T any](ctx context.Context, s *Store, op string, out []T, scan pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err == nil {
		out, err = pgx.AppendRows(out, rows, scan)
	}
	if err != nil {
		return nil, s.dbErr(ctx, op, err)
	}
	return out, nil
}

// appendTo reads a batch's rows with scan into *out.
func appendTo[T any](out *[]T, scan pgx.RowToFunc[T]) func(pgx.Rows) error {
	return func(rows pgx.Rows) (err error) {
		*out, err = pgx.AppendRows(*out, rows, scan)
		return err
	}
}

// rowTo makes a RowToFunc of a scan that may read extra columns.
func rowTo[T any](scan func(pgx.Row, ...any) (T, error)) pgx.RowToFunc[T] {
	return func(row pgx.CollectableRow) (T, error) { return scan(row) }
}

// maxSeq bounds seqs and cursors: PostgreSQL's bigint.
const maxSeq = 1<<63 - 1

func checkSeq(field string, seq uint64) error {
	if seq > maxSeq {
		return journal.Invalid(field, "is %d, beyond the largest seq PostgreSQL stores (%d)", seq, uint64(maxSeq))
	}
	return nil
}

// validKey reports whether stream and id could name a stored registration:
// PostgreSQL's text holds neither invalid UTF-8 nor NUL.
func validKey(stream, id string) bool { return validText(stream) && validText(id) }

func validText(s string) bool {
	return utf8.ValidString(s) && !strings.Contains(s, "\x00")
}

func timeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}
