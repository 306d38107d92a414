package store

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// The rules every store applies beyond push's own checks, so that the stores
// differ only in how they keep data, never in what they accept or return.

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

// FirstCursor returns the cursor of a new registration r in a stream with the
// given head, low-water mark and seal: r.NextSeq, or the oldest retained
// record for 0. Errors: *PrunedError below the low-water mark,
// journal.ErrSealed past a sealed stream's head, journal.ErrInvalid past
// head+1.
func FirstCursor(r push.Registration, head, oldest uint64, sealed bool) (uint64, error) {
	next := cmp.Or(r.NextSeq, oldest)
	if err := CheckRetained(r.Stream, next, oldest); err != nil {
		return 0, err
	}
	if sealed && next > head {
		return 0, fmt.Errorf("register %s at #%d: %w", push.Name(r.Stream, r.ID), next,
			&journal.SealedError{Stream: r.Stream, FinalSeq: head})
	}
	return next, ValidateCursor(next, head)
}

// CheckMove checks an operator's skip (skip set) or rewind of a cursor from
// next to toSeq in a stream with the given head and low-water mark, and
// returns the evidence event and text the move stores: the operator's reason
// for a skip, where from and to for a rewind. Errors wrap journal.ErrInvalid
// (a *PrunedError below the low-water mark).
func CheckMove(skip bool, stream string, next, head, oldest, toSeq uint64, reason string) (event, text string, err error) {
	event, check := push.EventSkip, ValidateSkip
	if !skip {
		event, check, reason = push.EventRewind, ValidateRewind, fmt.Sprintf("rewound from #%d to #%d", next, toSeq)
	}
	if err := check(next, head, toSeq); err != nil {
		return "", "", err
	}
	return event, reason, CheckRetained(stream, toSeq, oldest)
}

// EvidenceLimit returns the effective limit of push.Store.Evidence:
// push.MaxEvidence for 0 or more than that. A negative limit is
// journal.ErrInvalid.
func EvidenceLimit(limit int) (int, error) {
	if limit < 0 {
		return 0, journal.Invalid("limit", "is %d: it must not be negative", limit)
	}
	if limit == 0 || limit > push.MaxEvidence {
		return push.MaxEvidence, nil
	}
	return limit, nil
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

// DuePicker chooses what Due claims from the due registrations of
// q.Namespace, offered in claim order (oldest NextAttemptAt first, then by
// key): at most q.Limit, More when one more could have been claimed, each
// host within q.HostRoom, and of a host that holds its registrations
// (push.Host.Holds) only one, whose probe is due, which moves the host's
// next probe.
type DuePicker struct {
	Batch  push.DueBatch // the picks, and the troubled hosts of the picks, each once
	Probed []push.Host   // hosts whose probe a pick is, with their next probe moved: to store

	q     push.DueQuery
	hosts map[string]push.Host
	taken map[string]int
}

// NewDuePicker returns a picker for q given the stored health of the hosts
// that may be troubled (others are up).
func NewDuePicker(q push.DueQuery, hosts map[string]push.Host) *DuePicker {
	return &DuePicker{q: q, hosts: hosts, taken: map[string]int{}}
}

// Offer considers the next due registration, and returns false once the
// batch is full (More is set: stop offering).
func (p *DuePicker) Offer(st push.Status) bool {
	host := st.Host()
	h, stored := p.hosts[host]
	held, probe := h.Holds(p.q.At)
	if room := p.q.HostRoom(host); (room >= 0 && p.taken[host] >= room) || (held && !probe) {
		return true // left for later by the cap or the host: not More
	}
	if len(p.Batch.Registrations) == p.q.Limit {
		p.Batch.More = true
		return false
	}
	if held {
		h = h.Probed(p.q.At)
		p.hosts[host] = h
		p.Probed = append(p.Probed, h)
	}
	if p.taken[host]++; p.taken[host] == 1 && stored && h.Troubled() {
		p.Batch.Hosts = append(p.Batch.Hosts, h)
	}
	p.Batch.Registrations = append(p.Batch.Registrations, st)
	return true
}
