package operator

import (
	"strconv"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
)

// ParseSpan reads a span of time as herald's flags and API fields take it:
// a Go duration ("36h", "30m", "0s") or whole days ("7d"). Errors wrap
// journal.ErrInvalid and name field; a negative span is refused, a range is
// the caller's.
func ParseSpan(field, s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return 0, journal.Invalid(field, "%q is not a whole number of days (e.g. 7d, 36h, 30m)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, journal.Invalid(field, "%q is not a duration (e.g. 7d, 36h, 30m)", s)
	case d < 0:
		return 0, journal.Invalid(field, "%q is negative", s)
	}
	return d, nil
}

// Span shows d as ParseSpan reads it: whole days as "7d", else Go's form.
func Span(d time.Duration) string {
	const day = 24 * time.Hour
	if d > 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}
