package sqlite

import (
	"context"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// ErrBusy is returned when another process held the database's write lock
// for longer than the busy timeout (10 s). Within one process it never
// happens: writers queue for the store's single write connection.
var ErrBusy = errors.New("the database is busy: another process held its write lock for more than 10s")

// translate turns an error from the driver into herald's, at this boundary:
// no modernc.org/sqlite type escapes the package (its message is kept as
// text). Errors that are already herald's, the context's or database/sql's
// are wrapped with op.
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
