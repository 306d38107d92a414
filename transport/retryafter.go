package transport

import (
	"net/http"
	"strings"
	"time"
)

// RetryAfterCeiling (10 years) is the largest delay ParseRetryAfter
// returns: a receiver asking for more, or for a number of seconds that
// overflows, means "not for a long time". The worker clamps it again to its
// MaxRetryAfter (1 h by default).
const RetryAfterCeiling = 10 * 365 * 24 * time.Hour

// ParseRetryAfter parses a Retry-After field value (RFC 9110 §10.2.3):
// delay-seconds (1*DIGIT) or an HTTP-date (RFC 9110 §5.6.7) in any of its
// three forms:
//
//	IMF-fixdate  Sun, 06 Nov 1994 08:49:37 GMT
//	RFC 850      Sunday, 06-Nov-94 08:49:37 GMT
//	asctime      Sun Nov  6 08:49:37 1994
//
// A date becomes a delay against at, the caller's instant (never the wall
// clock); an RFC 850 year more than 50 years after at is the most recent
// past year with those two digits (§5.6.7). Surrounding spaces and tabs are
// ignored.
//
// It returns the delay and true for a valid value: 0 for a date at or
// before at, at most RetryAfterCeiling. Anything else (empty, negative,
// fractional, signed, several values, another time zone, garbage) gives
// 0, false: the answer is treated as if it had no Retry-After.
func ParseRetryAfter(value string, at time.Time) (time.Duration, bool) {
	v := strings.Trim(value, " \t")
	if v == "" {
		return 0, false
	}
	if strings.TrimLeft(v, "0123456789") == "" {
		return delaySeconds(v), true
	}
	t, ok := parseHTTPDate(v, at)
	if !ok {
		return 0, false
	}
	return min(max(t.Sub(at), 0), RetryAfterCeiling), true // Sub saturates instead of overflowing
}

// delaySeconds converts a digit string to a duration, clamped to
// RetryAfterCeiling without ever overflowing.
func delaySeconds(s string) time.Duration {
	var n int64
	for i := 0; i < len(s); i++ {
		n = n*10 + int64(s[i]-'0')
		if n > int64(RetryAfterCeiling/time.Second) {
			return RetryAfterCeiling
		}
	}
	return time.Duration(n) * time.Second
}

const (
	imfFixdate = http.TimeFormat                          // "Mon, 02 Jan 2006 15:04:05 GMT"
	rfc850Date = "Monday, 02-Jan-06 15:04:05 GMT"         // time.RFC850 with GMT required
	asctimeDay = "Mon Jan _2 15:04:05 2006"               // time.ANSIC; asctime is in GMT
	rfc850Year = 50                                       // RFC 9110 §5.6.7's "more than 50 years in the future"
	maxDateLen = len("Wednesday, 09-Sep-09 09:09:09 GMT") // the longest valid HTTP-date
)

// parseHTTPDate parses the three HTTP-date forms. Unlike http.ParseTime it
// requires RFC 850 dates to say GMT (time.RFC850 reads an unknown zone as
// UTC), and it reads two-digit years relative to at (RFC 9110), not in
// Go's fixed 1969–2068 window.
func parseHTTPDate(v string, at time.Time) (time.Time, bool) {
	if len(v) > maxDateLen {
		return time.Time{}, false
	}
	if t, err := time.Parse(imfFixdate, v); err == nil {
		return t, true
	}
	if t, err := time.Parse(asctimeDay, v); err == nil {
		return t, true
	}
	t, err := time.Parse(rfc850Date, v)
	if err != nil {
		return time.Time{}, false
	}
	yy := t.Year() % 100
	ref := at.UTC().Year()
	year := ref - ref%100 + yy
	if year+100 <= ref+rfc850Year {
		year += 100
	}
	if year > ref+rfc850Year {
		year -= 100
	}
	return time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC), true
}
