package store

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// The rules every store shares beyond push's own checks (DueQuery.Validate,
// Claim.Validate, Evidence.Clean, push.ListLimit, push.ValidateInstant), so
// that the stores differ only in how they keep data, never in what they
// accept or return.

// CompareKeys orders keys by stream, then id, byte-wise (as SQL's COLLATE "C"
// and SQLite's BINARY do).
func CompareKeys(a, b push.Key) int {
	return cmp.Or(strings.Compare(a.Stream, b.Stream), strings.Compare(a.ID, b.ID))
}

// After reports whether k comes after the paging key after (the zero Key
// comes before every key).
func After(k, after push.Key) bool {
	return after == (push.Key{}) || CompareKeys(k, after) > 0
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

// ValidateSkip checks an operator's skip of a registration at cursor next in
// a stream whose head is head: next < toSeq <= head+1. Errors wrap
// journal.ErrInvalid.
func ValidateSkip(next, head, toSeq uint64) error {
	if next > head {
		return journal.Invalid("to seq", "is %d: the cursor (#%d) is past the head (#%d), nothing to skip", toSeq, next, head)
	}
	if toSeq <= next || toSeq > head+1 {
		return journal.Invalid("to seq", "is %d: a skip moves the cursor forward, from #%d to at most #%d (one past the head)", toSeq, next, head+1)
	}
	return nil
}

// ValidateRewind checks an operator's rewind of a registration at cursor
// next in a stream whose head is head: 1 <= toSeq <= next (a cursor is at
// most head+1). A rewind moves the cursor back, or keeps it (to retry at
// once); forward is a skip. Errors wrap journal.ErrInvalid.
func ValidateRewind(next, head, toSeq uint64) error {
	if toSeq < 1 || toSeq > min(next, head+1) {
		return journal.Invalid("to seq", "is %d: a rewind moves the cursor back, to a seq from 1 to the cursor (#%d); a skip moves it forward", toSeq, min(next, head+1))
	}
	return nil
}

// Summarize computes push.Stats from every registration's status, at
// instant at. Stores that can aggregate in their database need not use it.
func Summarize(all []push.Status, at time.Time) push.Stats {
	st := push.Stats{Namespaces: map[string]push.NamespaceStats{}}
	for _, s := range all {
		n := st.Namespaces[s.Namespace]
		switch s.State() {
		case push.StateParked:
			n.Parked++
			if st.OldestParked == nil || s.ParkedAt.Before(st.OldestParked.ParkedAt) {
				s := s
				st.OldestParked = &s
			}
		case push.StateIdle:
			n.Idle++
		case push.StateRetrying:
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
	slices.SortFunc(st.Lagging, func(a, b push.Status) int {
		return cmp.Or(cmp.Compare(b.Lag(), a.Lag()), CompareKeys(a.Key(), b.Key()))
	})
	if len(st.Lagging) > push.MaxLagging {
		st.Lagging = st.Lagging[:push.MaxLagging]
	}
	return st
}
