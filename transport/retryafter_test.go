package transport_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/transport"
)

func TestParseRetryAfter(t *testing.T) {
	ceiling := transport.RetryAfterCeiling
	cases := []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"0", 0, true},
		{"1", time.Second, true},
		{"120", 120 * time.Second, true},
		{"  120\t", 120 * time.Second, true},
		{"007", 7 * time.Second, true},
		{"315360000", ceiling, true}, // exactly ten years
		{"315360001", ceiling, true},
		{"9223372036854775807", ceiling, true},
		{"99999999999999999999999999999999999999", ceiling, true},
		{strings.Repeat("9", 10000), ceiling, true},

		// The three HTTP-date forms of RFC 9110 §5.6.7, against at.
		{"Sun, 01 Mar 2026 12:01:30 GMT", 90 * time.Second, true},
		{"Sunday, 01-Mar-26 12:01:30 GMT", 90 * time.Second, true},
		{"Sun Mar  1 12:01:30 2026", 90 * time.Second, true},
		{"Sun, 01 Mar 2026 12:00:00 GMT", 0, true}, // now
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0, true}, // the past
		{"Thu, 01 Jan 1970 00:00:00 GMT", 0, true}, // far past
		{"Mon, 01 Jan 0001 00:00:00 GMT", 0, true}, // the zero time
		{"Fri, 31 Dec 9999 23:59:59 GMT", ceiling, true},
		{"Wed, 01 Mar 2028 12:00:00 GMT", 731 * 24 * time.Hour, true}, // the weekday is not checked; 29 Feb 2028 counts
		// RFC 850 two-digit years: more than 50 years ahead of at means the
		// past century (§5.6.7), not Go's fixed 1969–2068 window.
		{"Monday, 01-Mar-27 12:00:00 GMT", 365 * 24 * time.Hour, true}, // 2027
		{"Sunday, 01-Mar-70 12:00:00 GMT", ceiling, true},              // 2070 (44 years ahead, clamped), not 1970
		{"Sunday, 01-Mar-77 12:00:00 GMT", 0, true},                    // 1977 (2077 is 51 years ahead), in the past
	}
	for _, c := range cases {
		got, ok := transport.ParseRetryAfter(c.value, at)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %t; want %v, %t", c.value, got, ok, c.want, c.ok)
		}
	}
	// Invalid values: the answer is taken as if it had no Retry-After.
	for _, v := range []string{"", "   ", "-5", "+5", "1.5", "1e3", "120, 60", "soon", "0x10",
		"١٢٠", // Arabic-Indic digits are not DIGIT
		"Sun, 01 Mar 2026 12:01:30 PST", "Sunday, 01-Mar-26 12:01:30 PST", "Sun, 01 Mar 2026 12:01:30",
		"2026-03-01T12:01:30Z", "Sun, 32 Mar 2026 12:01:30 GMT", "Sun, 01 Mar 2026 25:01:30 GMT",
		"Sun, 01 Mar 2026 12:01:30 GMT and more",
	} {
		if got, ok := transport.ParseRetryAfter(v, at); got != 0 || ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %t; want 0, false", v, got, ok)
		}
	}
}

// The caller's instant decides, not the wall clock: the same date gives a
// delay measured from at.
func TestParseRetryAfterUsesTheCallersInstant(t *testing.T) {
	date := "Sun, 01 Mar 2026 13:00:00 GMT"
	for _, now := range []time.Time{at, at.Add(30 * time.Minute), at.Add(-24 * time.Hour)} {
		got, ok := transport.ParseRetryAfter(date, now)
		want := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC).Sub(now)
		if !ok || got != want {
			t.Errorf("at %v: %v, %t; want %v", now, got, ok, want)
		}
	}
}

func ExampleParseRetryAfter() {
	at := time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "Sun, 01 Mar 2026 12:05:00 GMT", "Sun, 01 Mar 2026 11:00:00 GMT", "-1", "soon"} {
		d, ok := transport.ParseRetryAfter(v, at)
		fmt.Printf("%-31q %v %t\n", v, d, ok)
	}
	// Output:
	// "120"                           2m0s true
	// "Sun, 01 Mar 2026 12:05:00 GMT" 5m0s true
	// "Sun, 01 Mar 2026 11:00:00 GMT" 0s true
	// "-1"                            0s false
	// "soon"                          0s false
}
