package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
)

// RetryPolicy is how a registration retries a record that failed: the delays
// between attempts, and the ceiling at which it parks. Parking is the only
// way to give up: nothing is dropped, `herald unpark` resumes at the cursor.
// A zero field is the worker's (store.WithSchedule, store.WithMaxAttempts) or
// else the namespace's default (store.RetryDefaulter); the delays and the
// ceiling default apart.
type RetryPolicy struct {
	// Schedule is a fixed list of delays, each MinRetryDelay to
	// MaxRetryDelay, at most MaxScheduleSteps: the n-th failure in a row
	// (1-based) waits Schedule[min(n, len)-1], the last repeating until the
	// ceiling. Empty: the default (Backoff unless the namespace has one).
	Schedule []time.Duration `json:"schedule,omitempty"`
	// MaxAttempts parks on the failure that makes the attempts at one record
	// reach it, 1 to MaxAttemptsLimit.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// For parks on the first failure at least For after the first failure
	// of the current run (Registration.FailingSince), MinRetryFor to
	// MaxRetryFor. With MaxAttempts too, whichever comes first parks; with
	// neither, the default ceiling applies.
	For time.Duration `json:"for,omitempty"`
}

// Retry policy bounds.
const (
	MinRetryDelay    = time.Second
	MaxRetryDelay    = 7 * 24 * time.Hour // a longer wait between two attempts is a pause: herald pause
	MaxScheduleSteps = 32
	MaxAttemptsLimit = 100000
	MinRetryFor      = time.Minute
	MaxRetryFor      = 365 * 24 * time.Hour
)

// IsZero reports whether p sets nothing.
func (p RetryPolicy) IsZero() bool { return len(p.Schedule) == 0 && p.MaxAttempts == 0 && p.For == 0 }

// Or returns p with its unset parts taken from d: the delays, and the
// ceiling (MaxAttempts and For together).
func (p RetryPolicy) Or(d RetryPolicy) RetryPolicy {
	if len(p.Schedule) == 0 {
		p.Schedule = d.Schedule
	}
	if p.MaxAttempts == 0 && p.For == 0 {
		p.MaxAttempts, p.For = d.MaxAttempts, d.For
	}
	return p
}

// Delay returns the wait after a failure with failures earlier ones in a
// row: the schedule's step, else Backoff(stream, id, failures).
func (p RetryPolicy) Delay(stream, id string, failures int) time.Duration {
	if len(p.Schedule) == 0 {
		return Backoff(stream, id, failures)
	}
	return p.Schedule[min(max(failures, 0), len(p.Schedule)-1)]
}

// Exhausted says whether the failure at instant at, the attempt-th in a row
// at one record and the run's first at since, reaches the ceiling, and if so
// which, in words.
func (p RetryPolicy) Exhausted(attempt int, since, at time.Time) (string, bool) {
	if p.MaxAttempts > 0 && attempt >= p.MaxAttempts {
		return fmt.Sprintf("attempt %d of %d: retry ceiling reached", attempt, p.MaxAttempts), true
	}
	if p.For > 0 && !since.IsZero() && at.Sub(since) >= p.For {
		return fmt.Sprintf("attempt %d, failing for %v since %s: retry ceiling (%v) reached",
			attempt, at.Sub(since).Round(time.Second), since.UTC().Format(time.RFC3339), p.For), true
	}
	return "", false
}

// Validate checks a policy; zero fields are valid (the defaults). Errors wrap
// journal.ErrInvalid and name the field: retry_schedule, max_attempts,
// retry_for.
func (p RetryPolicy) Validate() error {
	if len(p.Schedule) > MaxScheduleSteps {
		return journal.Invalid("retry_schedule", "has %d delays, more than %d", len(p.Schedule), MaxScheduleSteps)
	}
	for i, d := range p.Schedule {
		if d < MinRetryDelay || d > MaxRetryDelay {
			return journal.Invalid("retry_schedule", "delay %d is %v: each must be %v to %v", i+1, d, MinRetryDelay, FormatDays(MaxRetryDelay))
		}
	}
	if p.MaxAttempts < 0 || p.MaxAttempts > MaxAttemptsLimit {
		return journal.Invalid("max_attempts", "is %d: it must be 1 to %d (0: the default)", p.MaxAttempts, MaxAttemptsLimit)
	}
	if p.For != 0 && (p.For < MinRetryFor || p.For > MaxRetryFor) {
		return journal.Invalid("retry_for", "is %v: it must be %v to %v (0: the default)", p.For, MinRetryFor, FormatDays(MaxRetryFor))
	}
	return nil
}

// ParseDays reads a span of time as herald's flags and API fields take it:
// a duration as time.ParseDuration reads one ("36h", "5m30s", "0s") or whole
// days ("3d"), from lo to hi; FormatDays writes it back. Errors name field
// and the range, and wrap journal.ErrInvalid.
func ParseDays(field, s string, lo, hi time.Duration) (time.Duration, error) {
	d, not := parseDays(s, lo, hi)
	if not != "" {
		return 0, journal.Invalid(field, "%q %s", s, not)
	}
	return d, nil
}

// parseDays is ParseDays without the error: when s is refused, why, in
// words that follow it.
func parseDays(s string, lo, hi time.Duration) (d time.Duration, not string) {
	outside := fmt.Sprintf("is out of range: it must be %s to %s", FormatDays(lo), FormatDays(hi))
	const malformed = "is not a duration (5s, 30m, 2h) or whole days (3d)"
	if rest, neg := strings.CutPrefix(s, "-"); neg {
		if _, why := parseDays(rest, 0, math.MaxInt64); why == malformed {
			return 0, malformed
		}
		return 0, outside
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange), err == nil && n > uint64(hi/(24*time.Hour)):
			return 0, outside
		case err != nil:
			return 0, malformed
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			if durationShape.MatchString(s) {
				return 0, outside // well formed: too long for a time.Duration
			}
			return 0, malformed
		}
	}
	if d < lo || d > hi {
		return 0, outside
	}
	return d, ""
}

// durationShape is a duration as time.ParseDuration reads one, of any length.
var durationShape = regexp.MustCompile(`^([0-9]*\.?[0-9]*(ns|us|µs|μs|ms|s|m|h))+$`)

// ParseSchedule reads a comma-separated list of delays, each as ParseDays
// reads one, MinRetryDelay to MaxRetryDelay ("5s,5m,30m,2h,5h,10h,10h").
// Errors name field, and the delay shown once, cut as journal.Invalid cuts
// a value.
func ParseSchedule(field, s string) ([]time.Duration, error) {
	var out []time.Duration
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		d, not := parseDays(part, MinRetryDelay, MaxRetryDelay)
		if not != "" {
			return nil, journal.Invalid(field, "delay %d: %q %s", i+1, part, not)
		}
		out = append(out, d)
	}
	return out, nil
}

// FormatDays writes d as "3d" for whole days, else as time.Duration does
// without zero parts ("5m", "1h30m").
func FormatDays(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// EncodeRetry is how a store keeps a policy: JSON, "{}" for the zero one,
// delays in nanoseconds.
func EncodeRetry(p RetryPolicy) string {
	b, _ := json.Marshal(p) // durations and ints always encode
	return string(b)
}

// DecodeRetry reads what EncodeRetry wrote ("" as "{}").
func DecodeRetry(s string) (RetryPolicy, error) {
	var p RetryPolicy
	if s == "" {
		return p, nil
	}
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return p, fmt.Errorf("a registration's retry policy %q is not JSON: %w", s, err)
	}
	return p, nil
}
