package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/heraldpush/herald/journal"
)

// Errors of the database itself (package doc, "Errors").
var (
	// ErrUnavailable: the database could not be reached, or the connection
	// broke (server restart, pg_terminate_backend, network). The operation
	// may or may not have committed if it broke during COMMIT; herald's
	// writes are idempotent or monotonic, so retrying is safe.
	ErrUnavailable = errors.New("PostgreSQL is unavailable")
	// ErrRetry: the transaction lost a race the database could not
	// serialise (a serialization failure or deadlock, under REPEATABLE READ
	// or SERIALIZABLE callers' transactions); run it again.
	ErrRetry = errors.New("transaction could not be serialised: retry it")
)

// Error is a database failure translated at this package's boundary. It
// wraps the sentinel that says what it means, if any.
type Error struct {
	Op       string // e.g. "append", "due"
	Message  string // the driver's or server's message
	SQLState string // e.g. "57P01"; empty when no server error came back
	kind     error
}

func (e *Error) Error() string {
	msg := "postgres: " + e.Op + ": "
	if e.kind == ErrUnavailable {
		msg += "PostgreSQL is unavailable: "
	}
	msg += e.Message
	if e.SQLState != "" {
		msg += " (SQLSTATE " + e.SQLState + ")"
	}
	return msg
}

// Unwrap returns the sentinel the failure maps to (ErrUnavailable, ErrRetry,
// journal.ErrConflict, journal.ErrInvalid, journal.ErrNotFound), or nil.
func (e *Error) Unwrap() error { return e.kind }

// dbErr is dbError that also resets the pool on a connection failure, so
// that the next call picks up no other connection the outage broke.
func (s *Store) dbErr(ctx context.Context, op string, err error) error {
	err = dbError(ctx, op, err)
	if errors.Is(err, ErrUnavailable) {
		s.pool.Reset()
	}
	return err
}

// dbError translates an error from pgx: it keeps the message and SQLSTATE
// and drops the pgx types.
func dbError(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)) {
		return fmt.Errorf("postgres: %s: %w", op, ctxErr)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &Error{Op: op, Message: "no such row", kind: journal.ErrNotFound}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		e := &Error{Op: op, Message: pgErr.Message, SQLState: pgErr.Code}
		switch code := pgErr.Code; {
		case code == "23505": // unique_violation
			e.kind = journal.ErrConflict
		case code == "40001" || code == "40P01": // serialization_failure, deadlock_detected
			e.kind = ErrRetry
		case strings.HasPrefix(code, "08"), // connection exceptions
			code == "57P01", code == "57P02", code == "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
			code == "53300": // too_many_connections
			e.kind = ErrUnavailable
		case code == "22021" || code == "22P05" || code == "54000": // bad UTF-8, untranslatable, program limit
			e.kind = journal.ErrInvalid
		}
		return e
	}
	e := &Error{Op: op, Message: err.Error()}
	if errors.Is(err, puddle.ErrClosedPool) {
		e.Message = "the store's connection pool is closed"
	}
	var (
		connectErr *pgconn.ConnectError
		netErr     net.Error
	)
	if errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, puddle.ErrClosedPool) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		e.kind = ErrUnavailable
	}
	return e
}
