package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// requireNoPgxTypes checks that no pgx or pgconn error type is reachable
// from err.
func requireNoPgxTypes(t *testing.T, err error) {
	t.Helper()
	var (
		pgErr      *pgconn.PgError
		connectErr *pgconn.ConnectError
		parseErr   *pgconn.ParseConfigError
	)
	require.False(t, errors.As(err, &pgErr), "a *pgconn.PgError leaks from %v", err)
	require.False(t, errors.As(err, &connectErr), "a *pgconn.ConnectError leaks from %v", err)
	require.False(t, errors.As(err, &parseErr), "a *pgconn.ParseConfigError leaks from %v", err)
	require.False(t, errors.Is(err, pgx.ErrNoRows), "pgx.ErrNoRows leaks from %v", err)
	require.False(t, errors.Is(err, pgconn.ErrConnClosed), "pgconn.ErrConnClosed leaks from %v", err)
}

// TestErrorsAreTranslated: failures of the database reach callers as
// herald's errors, never as pgx or pgconn types, and never with a password.
func TestErrorsAreTranslated(t *testing.T) {
	ctx := t.Context()

	t.Run("unreachable server", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := l.Addr().(*net.TCPAddr).Port
		require.NoError(t, l.Close()) // nothing listens there now
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err = postgres.Open(ctx, fmt.Sprintf("postgres://herald:hunter2@127.0.0.1:%d/herald?sslmode=disable&connect_timeout=5", port))
		require.ErrorIs(t, err, postgres.ErrUnavailable)
		require.NotContains(t, err.Error(), "hunter2")
		requireNoPgxTypes(t, err)
	})

	t.Run("unparseable url", func(t *testing.T) {
		_, err := postgres.Open(ctx, "postgres://herald:hunter2@[bad/herald?pool_max_conns=many")
		require.ErrorIs(t, err, journal.ErrInvalid)
		require.NotContains(t, err.Error(), "hunter2")
		requireNoPgxTypes(t, err)
	})

	s := newStore(t)
	_, err := s.Append(ctx, "s", entry("a"))
	require.NoError(t, err)
	_, err = s.Register(ctx, store.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: "https://receiver.example/r"})
	require.NoError(t, err)

	t.Run("not found", func(t *testing.T) {
		_, err := s.Lookup(ctx, "nothing")
		require.ErrorIs(t, err, journal.ErrNotFound)
		require.Contains(t, err.Error(), `"nothing"`, "the error says what was looked for")
		requireNoPgxTypes(t, err)
		_, err = s.Get(ctx, "s", "nobody")
		require.ErrorIs(t, err, journal.ErrNotFound)
		require.Contains(t, err.Error(), "stream=s id=nobody")
		requireNoPgxTypes(t, err)
		_, err = s.Get(ctx, "s\xff", "r\x00") // text PostgreSQL cannot hold names nothing
		require.ErrorIs(t, err, journal.ErrNotFound)
		require.ErrorIs(t, s.Advance(ctx, store.Claim{Stream: "s\x00", ID: "r", Owner: "w"}, 2), journal.ErrNotFound)
		none, err := s.List(ctx, store.ListQuery{Stream: "s\xff"})
		require.NoError(t, err)
		require.Empty(t, none)
	})

	t.Run("server error", func(t *testing.T) {
		tx, err := s.Pool().Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `SELECT 1/0`)
		require.Error(t, err)
		_, err = s.AppendTx(ctx, tx, "s", entry("b")) // the transaction is aborted
		require.Error(t, err)
		var pe *postgres.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "25P02", pe.SQLState, "in_failed_sql_transaction")
		requireNoPgxTypes(t, err)
	})

	t.Run("serialization failure", func(t *testing.T) {
		// Two REPEATABLE READ transactions append one new id: the second
		// cannot insert it once the first committed it after its snapshot.
		a, err := s.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		require.NoError(t, err)
		defer a.Rollback(ctx)
		b, err := s.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		require.NoError(t, err)
		defer b.Rollback(ctx)
		_, err = b.Exec(ctx, `SELECT 1 FROM herald_stream`) // b's snapshot starts now
		require.NoError(t, err)
		_, err = s.AppendTx(ctx, a, "s", entry("rr"))
		require.NoError(t, err)
		require.NoError(t, a.Commit(ctx))
		_, err = s.AppendTx(ctx, b, "s", entry("rr"))
		require.ErrorIs(t, err, postgres.ErrRetry)
		requireNoPgxTypes(t, err)
	})

	t.Run("closed pool", func(t *testing.T) {
		closed, err := postgres.Open(ctx, s.Pool().Config().ConnString())
		require.NoError(t, err)
		closed.Close()
		_, err = closed.Head(ctx, "s")
		require.ErrorIs(t, err, postgres.ErrUnavailable)
		requireNoPgxTypes(t, err)
	})

	t.Run("context ended", func(t *testing.T) {
		done, cancel := context.WithCancel(ctx)
		cancel()
		_, err := s.Read(done, "s", 1, 10, 0)
		require.ErrorIs(t, err, context.Canceled)
		requireNoPgxTypes(t, err)
	})
}
