package postgres

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

var (
	_ journal.Journal = (*Store)(nil)
	_ push.Store      = (*Store)(nil)
)

// Store is herald's journal and push store over one PostgreSQL database. It
// is safe for concurrent use, and any number of Stores, in any number of
// processes, may share a database.
type Store struct {
	pool    *pgxpool.Pool
	ownPool bool
	now     func() time.Time

	appended   chan struct{}    // AppendTx pokes RunSequencer
	sequencing atomic.Int32     // RunSequencer loops running: Due leaves the numbering to them
	ownPID     atomic.Uint32    // backend of RunSequencerWaking's connection (0: none): Listeners skip its notifications
	stepHook   func(pid uint32) // tests: called in a sequencer step before its commit
	page       int              // sequencerPage; tests make it smaller
	seqBusy    time.Duration    // RunSequencer's longest interval while records come (WithSequencerInterval)

	pruneMu   sync.Mutex // one Prune at a time: they share pruneFrom
	pruneFrom string     // the stream the next Prune starts at ("" = the first)
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that stamps Record.AppendedAt (default
// time.Now). Instants are kept to the microsecond, PostgreSQL's precision.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithSequencerInterval sets the longest interval between RunSequencer's
// steps while records keep coming (DefaultSequencerInterval; from
// MinSequencerInterval to MaxSequencerInterval): the most a committed
// record waits for its seq, plus one step. Longer makes fewer, larger
// steps, each a commit and about a millisecond of server CPU; the minimum
// polls at a fixed 5 ms, as herald did before.
func WithSequencerInterval(d time.Duration) Option {
	return func(s *Store) { s.seqBusy = d }
}

// The bounds of WithSequencerInterval, and its default.
const (
	DefaultSequencerInterval = sequencerPollBusy
	MinSequencerInterval     = sequencerPollMin
	MaxSequencerInterval     = sequencerPollMax
)

// Open connects to the database at url (a postgres:// URL or key=value
// connection string, with pgxpool's pool_* parameters) with its own pool,
// and checks the schema as New does. Errors: journal.ErrInvalid (url cannot
// be parsed; the error does not repeat it), ErrUnavailable (cannot connect),
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

// NewPool returns a pgxpool for url, for New. It connects lazily but checks
// that the server answers. Errors: journal.ErrInvalid (url cannot be
// parsed; the error does not repeat it, which may hold a password),
// ErrUnavailable.
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
	if err != nil {
		return nil, dbError(ctx, "connect", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, dbError(ctx, "connect", err)
	}
	return pool, nil
}

// New returns a Store over pool, which the caller keeps and closes (after
// Close). It checks the database's schema version and changes nothing if it
// is not this binary's. Errors wrap store.ErrSchemaBehind (run `herald
// migrate up`), store.ErrSchemaAhead, store.ErrSchemaDirty, store.ErrNotHerald, or
// ErrUnavailable.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	if pool == nil {
		return nil, journal.Invalid("pool", "is nil")
	}
	s := &Store{pool: pool, now: time.Now,
		appended: make(chan struct{}, 1), page: sequencerPage, seqBusy: sequencerPollBusy}
	for _, o := range opts {
		o(s)
	}
	if s.now == nil {
		return nil, journal.Invalid("clock", "is nil")
	}
	if s.seqBusy < sequencerPollMin || s.seqBusy > sequencerPollMax {
		return nil, journal.Invalid("sequencer interval", "is %v: it must be from %v to %v", s.seqBusy, sequencerPollMin, sequencerPollMax)
	}
	if err := checkSchema(ctx, pool); err != nil {
		return nil, err
	}
	return s, nil
}

// Pool returns the pool the store uses, for a caller's own transactions
// (AppendTx).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool if Open made it. The store must not be used
// afterwards. It returns nil: the error is there so that every herald store
// closes as an io.Closer.
func (s *Store) Close() error {
	if s.ownPool {
		s.pool.Close()
	}
	return nil
}

// inTx runs fn in a transaction of its own and commits it. fn returns errors
// already translated (dbErr) or herald's own.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.dbErr(ctx, op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return s.dbErr(ctx, op+": commit", err)
	}
	return nil
}

// stamp returns the store's clock in UTC, to the microsecond.
func (s *Store) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// maxSeq bounds seqs and cursors: PostgreSQL's bigint.
const maxSeq = 1<<63 - 1

func checkSeq(field string, seq uint64) error {
	if seq > maxSeq {
		return journal.Invalid(field, "is %d, beyond the largest seq PostgreSQL stores (%d)", seq, uint64(maxSeq))
	}
	return nil
}

func notFound(stream, id string) error {
	return fmt.Errorf("registration %s: %w", push.Name(stream, id), journal.ErrNotFound)
}
