package push

import (
	"cmp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldpush/herald/journal"
)

// This file holds the rules every Store implementation shares, so that the
// stores differ only in how they keep data, never in what they accept.

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

// CompareKeys orders keys by stream, then id, byte-wise (as SQL's COLLATE "C"
// and SQLite's BINARY do).
func CompareKeys(a, b Key) int {
	return cmp.Or(strings.Compare(a.Stream, b.Stream), strings.Compare(a.ID, b.ID))
}

// After reports whether k comes after the paging key after (the zero Key
// comes before every key).
func After(k, after Key) bool {
	return after == (Key{}) || CompareKeys(k, after) > 0
}

// ValidateSkip checks an operator's skip of a registration at cursor next in
// a stream whose head is head: next < toSeq <= head+1. Errors wrap
// journal.ErrInvalid.
func ValidateSkip(next, head, toSeq uint64) error {
	if toSeq <= next || toSeq > head+1 {
		return journal.Invalid("to seq", "is %d: a skip moves the cursor forward, from #%d to at most #%d (one past the head)", toSeq, next, head+1)
	}
	return nil
}

// ValidateRewind checks an operator's rewind in a stream whose head is head:
// 1 <= toSeq <= head+1. Errors wrap journal.ErrInvalid.
func ValidateRewind(head, toSeq uint64) error {
	if toSeq < 1 || toSeq > head+1 {
		return journal.Invalid("to seq", "is %d: it must be from 1 to %d (one past the head)", toSeq, head+1)
	}
	return nil
}

// Summarize computes Stats from every registration's status, at instant at.
// Stores that can aggregate in their database need not use it.
func Summarize(all []Status, at time.Time) Stats {
	st := Stats{Namespaces: map[string]NamespaceStats{}}
	for _, s := range all {
		n := st.Namespaces[s.Namespace]
		switch s.State() {
		case StateParked:
			n.Parked++
			if st.OldestParked == nil || s.ParkedAt.Before(st.OldestParked.ParkedAt) {
				s := s
				st.OldestParked = &s
			}
		case StateIdle:
			n.Idle++
		case StateRetrying:
			n.Retrying++
		default:
			n.Ready++
		}
		if s.LeaseUntil.After(at) {
			n.Leased++
		}
		n.Behind += s.Lag()
		st.Namespaces[s.Namespace] = n
		if s.Lag() > 0 {
			st.Lagging = append(st.Lagging, s)
		}
	}
	slices.SortFunc(st.Lagging, func(a, b Status) int {
		return cmp.Or(cmp.Compare(b.Lag(), a.Lag()), CompareKeys(a.Key(), b.Key()))
	})
	if len(st.Lagging) > MaxLagging {
		st.Lagging = st.Lagging[:MaxLagging]
	}
	return st
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

// ValidateCursor checks a cursor a worker saves in a stream whose head is
// head: 1 <= nextSeq <= head+1 (one past the head: everything acknowledged).
// Errors wrap journal.ErrInvalid.
func ValidateCursor(nextSeq, head uint64) error {
	if nextSeq < 1 || nextSeq > head+1 {
		return journal.Invalid("next seq", "is %d: a cursor is from 1 to %d (one past the head)", nextSeq, head+1)
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
