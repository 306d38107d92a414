package demo

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// maxReasons bounds the distinct failure reasons a ledger keeps per path.
const maxReasons = 3

// expected is one message the journal says a registration's receiver
// should get: the record, and what the projection made of it.
type expected struct {
	Record  journal.Record
	Message push.Message
}

// ledger is a receiver's own account of what it was sent, one path per
// registration: what the journal says should arrive there, in order, and
// what did. A receiver first verifies a delivery with the receiving side of
// its wire's library (signature, token, decoding), then checks it here
// against the journal. It is safe for concurrent use.
type ledger struct {
	mu    sync.Mutex
	paths map[string]*account
}

// account is one path's expectations and counts.
type account struct {
	want       []expected
	verified   int // distinct messages verified, in order: want[:verified]
	duplicates int // messages verified before and sent again (at-least-once)
	refused    int // answered without verifying: a faulty receiver's 503, 410 or 500
	failures   int
	reasons    []string
}

// Counts is what a receiver verified on one path.
type Counts struct {
	Expected   int      `json:"expected"`          // messages the journal says this path should receive
	Verified   int      `json:"verified"`          // distinct messages verified, in journal order
	Duplicates int      `json:"duplicates"`        // verified messages received again
	Refused    int      `json:"refused"`           // requests answered with a failure on purpose (503, 410, 500)
	Failures   int      `json:"failures"`          // requests that failed verification
	Reasons    []string `json:"reasons,omitempty"` // the first distinct reasons of the failures, at most 3
}

func newLedger() *ledger { return &ledger{paths: map[string]*account{}} }

// expect sets what path should receive.
func (l *ledger) expect(path string, want []expected) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.paths[path] = &account{want: want}
}

// counts returns path's counts.
func (l *ledger) counts(path string) Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.paths[path]
	if a == nil {
		return Counts{}
	}
	return Counts{Expected: len(a.want), Verified: a.verified, Duplicates: a.duplicates, Refused: a.refused,
		Failures: a.failures, Reasons: slices.Clone(a.reasons)}
}

// total sums the counts of every path.
func (l *ledger) total() Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	var c Counts
	for _, p := range slices.Sorted(maps.Keys(l.paths)) {
		a := l.paths[p]
		c.Expected += len(a.want)
		c.Verified += a.verified
		c.Duplicates += a.duplicates
		c.Refused += a.refused
		c.Failures += a.failures
		for _, r := range a.reasons {
			if len(c.Reasons) < maxReasons && !slices.Contains(c.Reasons, r) {
				c.Reasons = append(c.Reasons, r)
			}
		}
	}
	return c
}

// refuse counts a request answered with a failure on purpose.
func (l *ledger) refuse(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.account(path).refused++
}

// fail counts a request that failed verification and returns err.
func (l *ledger) fail(path string, err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.account(path).failed(err)
	return err
}

// failed counts a failure and keeps its reason, if new and there is room.
func (a *account) failed(err error) {
	a.failures++
	if len(a.reasons) < maxReasons && !slices.Contains(a.reasons, err.Error()) {
		a.reasons = append(a.reasons, err.Error())
	}
}

// account returns path's account, creating an empty one for a path that
// expects nothing (so that what arrives there is counted, and fails).
func (l *ledger) account(path string) *account {
	a := l.paths[path]
	if a == nil {
		a = &account{}
		l.paths[path] = a
	}
	return a
}

// check matches one verified delivery against the journal: it must be the
// next message path expects (by id when the wire carries one, else by
// body; and its body, when given, byte for byte), or one verified before
// (a duplicate, which at-least-once delivery allows). more, if set, checks
// the wire's own fields against the expected record. A mismatch counts as
// a failure and is returned.
func (l *ledger) check(path, id string, body []byte, more func(expected) error) (duplicate bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.account(path)
	fail := func(err error) (bool, error) {
		a.failed(err)
		return false, err
	}
	same := func(e expected) bool {
		if id != "" {
			return e.Message.ID == id
		}
		return bytes.Equal(e.Message.Body, body)
	}
	if a.verified < len(a.want) && same(a.want[a.verified]) {
		e := a.want[a.verified]
		if body != nil && !bytes.Equal(body, e.Message.Body) {
			return fail(fmt.Errorf("message %s: the body differs from what the projection makes of record %s#%d", e.Message.ID, e.Record.Stream, e.Record.Seq))
		}
		if more != nil {
			if err := more(e); err != nil {
				return fail(fmt.Errorf("message %s: %w", e.Message.ID, err))
			}
		}
		a.verified++
		return false, nil
	}
	if slices.ContainsFunc(a.want[:a.verified], same) {
		a.duplicates++
		return true, nil
	}
	got := id
	if got == "" {
		got = fmt.Sprintf("a %d-byte body", len(body))
	}
	if a.verified >= len(a.want) {
		return fail(fmt.Errorf("got %s after all %d expected messages", got, len(a.want)))
	}
	e := a.want[a.verified]
	return fail(fmt.Errorf("got %s where the journal says record %s#%d (message %s) comes next", got, e.Record.Stream, e.Record.Seq, e.Message.ID))
}
