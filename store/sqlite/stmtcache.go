package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// stmtCacheSize bounds the statements a connection keeps prepared: the
// store's own are about 90 (sql/*.sql; most run rarely), List's are built from a few
// shapes, and a prepared statement holds a few KiB of SQLite's memory.
const stmtCacheSize = 96

// cachingConnector opens the driver's connections with a statement cache:
// modernc.org/sqlite prepares (parses and plans) a statement on every
// ExecContext and QueryContext with a query text, which cost a delivery as
// much as running its statements did (BENCHMARKS.md §12.6). A connection
// reuses what it prepared for the same text, as SQLite's own shell and
// tclsqlite do; SQLite prepares a statement again by itself after a schema
// change (sqlite3_prepare_v2), so none runs against a stale schema.
type cachingConnector struct{ driver.Connector }

// newConnector returns the connector of openDB for dsn.
func newConnector(dsn string) (driver.Connector, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return cachingConnector{c}, nil
}

// driverConn is what modernc.org/sqlite's connections implement and
// database/sql uses.
type driverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// driverStmt is what its prepared statements implement.
type driverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// Connect opens a connection with an empty cache.
func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	dc, ok := conn.(driverConn)
	if !ok {
		conn.Close()
		return nil, errors.New("the sqlite driver's connection lacks the methods the statement cache needs")
	}
	return &cachingConn{driverConn: dc, stmts: map[string]*cachedStmt{}}, nil
}

// cachingConn is a connection with its prepared statements by text, at most
// stmtCacheSize, the least recently used evicted first. database/sql uses a
// connection from one goroutine at a time (driver.Conn), so it has no lock.
type cachingConn struct {
	driverConn
	stmts map[string]*cachedStmt
	clock uint64 // counts uses, for eviction
}

type cachedStmt struct {
	s    driverStmt
	used uint64
	busy bool // rows of it are open: a second use prepares its own
}

// stmt returns the cached statement for query, prepared now if it is not
// cached, or nil if it is in use (the caller runs query uncached).
func (c *cachingConn) stmt(ctx context.Context, query string) (*cachedStmt, error) {
	c.clock++
	if st, ok := c.stmts[query]; ok {
		if st.busy {
			return nil, nil
		}
		st.used = c.clock
		return st, nil
	}
	s, err := c.driverConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	ds, ok := s.(driverStmt)
	if !ok {
		s.Close()
		return nil, errors.New("the sqlite driver's statement lacks ExecContext or QueryContext")
	}
	if len(c.stmts) >= stmtCacheSize {
		c.evict()
	}
	st := &cachedStmt{s: ds, used: c.clock}
	c.stmts[query] = st
	return st, nil
}

// evict closes the least recently used statement not in use.
func (c *cachingConn) evict() {
	var oldest string
	var at uint64
	for q, st := range c.stmts {
		if !st.busy && (oldest == "" || st.used < at) {
			oldest, at = q, st.used
		}
	}
	if st, ok := c.stmts[oldest]; ok {
		delete(c.stmts, oldest)
		_ = st.s.Close()
	}
}

// ExecContext runs query's cached statement.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	st, err := c.stmt(ctx, query)
	if err != nil || st == nil {
		if err != nil {
			return nil, err
		}
		return c.driverConn.ExecContext(ctx, query, args)
	}
	st.busy = true
	defer func() { st.busy = false }()
	return st.s.ExecContext(ctx, args)
}

// QueryContext runs query's cached statement; it is in use until the rows
// close.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st, err := c.stmt(ctx, query)
	if err != nil || st == nil {
		if err != nil {
			return nil, err
		}
		return c.driverConn.QueryContext(ctx, query, args)
	}
	st.busy = true
	rows, err := st.s.QueryContext(ctx, args)
	if err != nil {
		st.busy = false
		return nil, err
	}
	return &cachedRows{Rows: rows, st: st}, nil
}

// Close closes the cached statements, then the connection.
func (c *cachingConn) Close() error {
	var errs []error
	for q, st := range c.stmts {
		errs = append(errs, st.s.Close())
		delete(c.stmts, q)
	}
	return errors.Join(append(errs, c.driverConn.Close())...)
}

// cachedRows frees its statement for the next use when closed.
type cachedRows struct {
	driver.Rows
	st *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.st.busy = false
	return err
}
