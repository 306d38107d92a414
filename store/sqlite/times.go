package sqlite

import (
	"database/sql"
	"math"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// Instants are stored as unix nanoseconds (INTEGER), which keeps Go's full
// precision and orders correctly; the zero time.Time is stored as NULL. The
// range is what an int64 of nanoseconds holds: years 1678 to 2262.
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
	if err := push.ValidateInstant(field, t); err != nil {
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
