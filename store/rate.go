package store

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/heraldpush/herald/journal"
)

// Rate bounds the requests a registration's receiver gets: at most Count in
// any window of Per, whichever workers send them (push's package doc,
// "Rate"). The zero Rate is no limit. Its text form is "N/s", "N/min" or
// "N/h" (JSON, the stores, the CLI's --rate).
type Rate struct {
	Count int           // 1 to MaxRateCount
	Per   time.Duration // time.Second, time.Minute or time.Hour
}

// MaxRateCount bounds Rate.Count: 10,000 a second is more than one
// registration's window carries to a receiver; 10,000 an hour (about 2.8 a
// second) is as finely as an hourly rate needs saying.
const MaxRateCount = 10000

var ratePattern = regexp.MustCompile(`^([1-9][0-9]*)/(s|min|h)$`)

var rateUnits = map[string]time.Duration{"s": time.Second, "min": time.Minute, "h": time.Hour}

// ParseRate reads a rate as Rate.String writes it: "10/s", "600/min",
// "5/h". Errors wrap journal.ErrInvalid and name field.
func ParseRate(field, s string) (Rate, error) {
	m := ratePattern.FindStringSubmatch(s)
	var n int
	if m != nil {
		n, _ = strconv.Atoi(m[1]) // digits; too many fail the bound
	}
	if n < 1 || n > MaxRateCount {
		return Rate{}, journal.Invalid(field, "%q must be N/s, N/min or N/h with N from 1 to %d (10/s, 600/min)", s, MaxRateCount)
	}
	return Rate{Count: n, Per: rateUnits[m[2]]}, nil
}

// IsZero reports whether r is no limit.
func (r Rate) IsZero() bool { return r == Rate{} }

// String is "10/s", "600/min" or "5/h"; "" for no limit.
func (r Rate) String() string {
	for unit, d := range rateUnits {
		if r.Per == d {
			return fmt.Sprintf("%d/%s", r.Count, unit)
		}
	}
	if r.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d per %v", r.Count, r.Per) // invalid: Validate refuses it
}

// Validate checks a rate: zero, or Count 1 to MaxRateCount per a second, a
// minute or an hour. Errors wrap journal.ErrInvalid and name "rate".
func (r Rate) Validate() error {
	if r.IsZero() {
		return nil
	}
	if r.Count < 1 || r.Count > MaxRateCount {
		return journal.Invalid("rate", "%s: N must be from 1 to %d", r, MaxRateCount)
	}
	if r.Per != time.Second && r.Per != time.Minute && r.Per != time.Hour {
		return journal.Invalid("rate", "%s: the period must be a second, a minute or an hour (N/s, N/min, N/h)", r)
	}
	return nil
}

// MarshalText writes String.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads ParseRate's form; "" is no limit.
func (r *Rate) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*r = Rate{}
		return nil
	}
	v, err := ParseRate("rate", string(b))
	if err == nil {
		*r = v
	}
	return err
}

// DecodeRate reads a rate as a store keeps it (String; "" for none).
func DecodeRate(s string) (Rate, error) {
	var r Rate
	if err := r.UnmarshalText([]byte(s)); err != nil {
		return r, fmt.Errorf("a registration's stored rate: %w", err)
	}
	return r, nil
}
