package push

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldpush/herald/journal"
)

// This file holds the checks push and every Store implementation share;
// the rules only stores need (ValidateCursor, ValidateSkip, ValidateRewind,
// Summarize, CompareKeys, After) are in package store.

// Validate checks a DueQuery. Errors wrap journal.ErrInvalid.
func (q DueQuery) Validate() error {
	switch {
	case q.Limit < 1:
		return journal.Invalid("limit", "is %d: it must be at least 1", q.Limit)
	case q.At.IsZero():
		return journal.Invalid("at", "is the zero time")
	case q.Owner == "":
		return journal.Invalid("lease owner", "is empty")
	case !q.LeaseUntil.After(q.At):
		return journal.Invalid("lease until", "%v is not after at %v", q.LeaseUntil, q.At)
	case q.MaxPerHost < 0:
		return journal.Invalid("max per host", "is %d: it must be 0 (no cap) or more", q.MaxPerHost)
	}
	for h, n := range q.Busy {
		if n < 0 {
			return journal.Invalid("busy", "host %q has %d in flight: counts cannot be negative", h, n)
		}
	}
	return ValidateNamespace(q.Namespace)
}

// HostRoom returns how many more registrations of host a claim for q may
// take: unbounded (-1) without a cap.
func (q DueQuery) HostRoom(host string) int {
	if q.MaxPerHost <= 0 {
		return -1
	}
	return max(q.MaxPerHost-q.Busy[host], 0)
}

// ListLimit returns the effective limit of a ListQuery: DefaultListLimit for
// 0, an ErrInvalid error below 0 or above MaxListLimit.
func ListLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultListLimit, nil
	case limit < 0 || limit > MaxListLimit:
		return 0, journal.Invalid("limit", "is %d: it must be from 1 to %d", limit, MaxListLimit)
	}
	return limit, nil
}

// MaxLagging is how many registrations Stats.Lagging lists.
const MaxLagging = 10

// Validate checks a claim: stream, id and owner all set. Errors wrap
// journal.ErrInvalid.
func (c Claim) Validate() error {
	if c.Stream == "" || c.ID == "" {
		return journal.Invalid("claim", "names no registration")
	}
	if c.Owner == "" {
		return journal.Invalid("claim", "has no lease owner: writes under a claim need the owner Due stamped")
	}
	return nil
}

// ValidateInstant checks that an instant a store is asked to record is set.
// Errors wrap journal.ErrInvalid.
func ValidateInstant(field string, t time.Time) error {
	if t.IsZero() {
		return journal.Invalid(field, "is the zero time")
	}
	return nil
}

// Limits of evidence text, in bytes.
const (
	MaxEvidenceError    = 2048
	MaxEvidenceLocation = 2048
)

// Clean returns ev with its text fields made storable anywhere: valid UTF-8
// (invalid bytes and NUL become U+FFFD, since a receiver chooses these bytes
// and PostgreSQL text refuses them) and cut at a rune boundary to
// MaxEvidenceBody, MaxEvidenceError and MaxEvidenceLocation bytes. Stores
// call it on every evidence row they write.
func (ev Evidence) Clean() Evidence {
	ev.Body = cleanText(ev.Body, MaxEvidenceBody)
	ev.Error = cleanText(ev.Error, MaxEvidenceError)
	ev.Location = cleanText(ev.Location, MaxEvidenceLocation)
	ev.RecordID = cleanText(ev.RecordID, journal.MaxIDBytes)
	ev.MessageID = cleanText(ev.MessageID, journal.MaxIDBytes)
	return ev
}

func cleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
