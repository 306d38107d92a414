package push

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldpush/herald/journal"
)

// Store keeps registrations, their cursors, leases and evidence.
//
// Implementations are safe for concurrent use, including by several worker
// processes where the backing database allows it (store/postgres). Every
// method returns errors wrapping journal's sentinels: ErrInvalid for bad
// input (nothing is changed), ErrNotFound for an unknown registration, and
// the database's own failures otherwise (never mistaken for a receiver's).
//
// The conformance suite store/storetest states the contract method by method;
// every implementation runs it.
//
// Park, Unpark, Complete, Skip, AddEvidence of an EventSkipped row, and
// HostStore's state changes also append herald's operational event to
// EventsStream in the same atomic step (events.go): a change that does not
// apply appends none.
type Store interface {
	// Register creates the registration, or updates the destination (URL,
	// namespace, config, policy) of an existing one, keeping its cursor and
	// retry state. A new registration starts at r.NextSeq (0 means the
	// oldest record the stream retains: 1 until it was pruned), due at once;
	// the state fields of r are otherwise ignored. It returns the stored
	// registration. Errors: ErrInvalid (see Registration.Validate; a new
	// cursor past head+1, or below the stream's low-water mark: a
	// *store.PrunedError), ErrSealed (the stream is sealed and the cursor is
	// past its final record: nothing would ever be delivered).
	Register(ctx context.Context, r Registration) (Registration, error)

	// Unregister deletes a registration and its evidence. Errors: ErrNotFound.
	Unregister(ctx context.Context, stream, id string) error

	// Get returns one registration with its stream's head. Errors: ErrNotFound.
	Get(ctx context.Context, stream, id string) (Status, error)

	// List returns registrations matching q, ordered by (stream, id), at most
	// q.Limit (default 100, at most 10,000) after q.After.
	List(ctx context.Context, q ListQuery) ([]Status, error)

	// Due claims up to q.Limit registrations of q.Namespace that have work
	// at q.At: not parked, no live lease (LeaseUntil <= At), NextAttemptAt <=
	// At, NextSeq <= head of the stream. It stamps each with the lease
	// (LeaseOwner = q.Owner, LeaseUntil = q.LeaseUntil) and NextAttemptAt =
	// q.At in the same atomic step, so that no other caller gets them while
	// the lease is live. Rows come oldest NextAttemptAt first, so that the
	// least recently claimed go first and a saturated namespace starves no
	// registration. It looks for q.Limit+1 and sets More when the
	// extra one exists (it is not claimed). Unserved counts due
	// registrations of other namespaces (not claimed either). A registration
	// whose cursor is past its stream's head is not returned, and costs the
	// sweep no journal read. With q.MaxPerHost > 0 the claim respects the
	// per-host cap (DueQuery.MaxPerHost). Errors: ErrInvalid (Limit < 1,
	// empty Owner or Namespace, LeaseUntil not after At, MaxPerHost or a
	// Busy count below 0).
	Due(ctx context.Context, q DueQuery) (DueBatch, error)

	// Advance saves a turn's progress and releases its lease, fenced by the
	// claim: it applies only while c.Owner still holds the registration's
	// lease (another worker's claim, an operator's unpark, skip or rewind
	// take it away). The cursor becomes max(stored, nextSeq), never less, and
	// if that moved it, Attempts and LastError are reset. NextAttemptAt is
	// left alone (it was due when claimed). Errors: ErrLeaseLost,
	// ErrNotFound, ErrInvalid (nextSeq 0 or past head+1, empty owner).
	Advance(ctx context.Context, c Claim, nextSeq uint64) error

	// Checkpoint saves a turn's progress as Advance does (fenced by the
	// claim; the cursor max(stored, nextSeq); Attempts, host failures and
	// LastError reset if it moved) but keeps the lease: LeaseOwner and
	// LeaseUntil stay as Due stamped them, so no other claim takes the
	// registration while the turn goes on to its next page. The turn ends
	// with Advance, Retry, Park or Complete under the same claim. Errors:
	// as Advance.
	Checkpoint(ctx context.Context, c Claim, nextSeq uint64) error

	// Retry records a failed attempt, fenced by the claim and in one atomic
	// step with the progress made before it: the cursor becomes max(stored,
	// nextSeq); Attempts becomes 1 if that moved the cursor, else
	// Attempts+1; NextAttemptAt = notBefore; LastError = ev.Error; the lease
	// is released; ev is stored as evidence (cleaned by Evidence.Clean, its
	// Stream and Registration set from c). Errors: ErrLeaseLost,
	// ErrNotFound, ErrInvalid (as Advance; a zero notBefore or ev.At).
	Retry(ctx context.Context, c Claim, nextSeq uint64, notBefore time.Time, ev Evidence) error

	// Park stops the registration, keeping its cursor, fenced by the claim
	// and in one atomic step with the progress made before it: the cursor
	// becomes max(stored, nextSeq) and Attempts counts the failure as Retry
	// does; Parked, ParkedAt = ev.At, LastError = ev.Error, the lease
	// released, ev stored as evidence. Errors: as Retry.
	Park(ctx context.Context, c Claim, nextSeq uint64, ev Evidence) error

	// Unpark resumes a parked registration at its cursor: Parked false,
	// Attempts 0, NextAttemptAt = at (due at once), and an "unparked"
	// evidence row. Unparking one that is not parked changes nothing.
	// Errors: ErrNotFound, ErrInvalid (a zero at).
	Unpark(ctx context.Context, stream, id string, at time.Time) error

	// Complete deletes a registration whose final record was acknowledged,
	// with its evidence, fenced by the claim: a sealed stream leaves no
	// registration behind. Errors: ErrLeaseLost, ErrNotFound.
	Complete(ctx context.Context, c Claim) error

	// Skip is the operator's move past a poison record: the cursor goes
	// forward to toSeq (NextSeq < toSeq <= head+1), Attempts 0, due at
	// once (NextAttemptAt = at), the lease cleared (a turn in flight can
	// no longer write), with an evidence row saying reason. A parked
	// registration stays parked. Errors: ErrNotFound, ErrInvalid (toSeq out
	// of range, a zero at).
	Skip(ctx context.Context, stream, id string, toSeq uint64, at time.Time, reason string) error

	// Rewind is the operator's replay: the cursor goes back to toSeq (1 <=
	// toSeq <= the cursor; the cursor itself retries at once), Attempts 0,
	// due at once, the lease cleared, with an evidence row ("rewound from
	// #N to #M"). The only way a cursor moves backwards; forward is Skip.
	// Errors: ErrNotFound, ErrInvalid (toSeq out of range or past the
	// cursor, a zero at; below the stream's low-water mark, a
	// *store.PrunedError).
	Rewind(ctx context.Context, stream, id string, toSeq uint64, at time.Time) error

	// AddEvidence stores one evidence row (a skipped message, say), keeping
	// at most MaxEvidence rows per registration (the newest). Errors:
	// ErrNotFound.
	AddEvidence(ctx context.Context, ev Evidence) error

	// Evidence returns a registration's evidence, newest first, at most
	// limit rows (0 means MaxEvidence). Errors: ErrNotFound.
	Evidence(ctx context.Context, stream, id string, limit int) ([]Evidence, error)

	// Stats counts registrations by namespace and state, at instant at (which
	// decides what is leased).
	Stats(ctx context.Context, at time.Time) (Stats, error)

	HostStore
}

// Claim is what a worker holds while it serves a registration that Due
// claimed for it: the registration's key and the lease owner Due stamped.
// Writes made under a claim (Advance, Checkpoint, Retry, Park, Complete) are fenced: they
// apply only while that owner still holds the lease, so a worker whose turn
// outlived its lease can neither undo another worker's progress nor an
// operator's rewind.
type Claim struct {
	Stream string
	ID     string
	Owner  string
}

// Claim returns the claim a registration returned by Due carries.
func (r Registration) Claim() Claim { return Claim{Stream: r.Stream, ID: r.ID, Owner: r.LeaseOwner} }

// ErrLeaseLost is returned by a fenced write whose claim no longer holds the
// registration's lease: another worker claimed it after the lease expired, or
// an operator unparked, skipped or rewound it. The work done under the claim
// is repeated by whoever holds it now; the worker drops its turn quietly.
var ErrLeaseLost = errors.New("lease lost: another worker or an operator took the registration over")

// MaxEvidence is how many evidence rows a store keeps per registration: the
// newest 100, enough to see a pattern in the failures without letting a
// receiver that is down for a month grow the table without bound.
const MaxEvidence = 100

// DueQuery asks Store.Due for work.
type DueQuery struct {
	At         time.Time // the sweep's instant: due-ness and lease expiry are judged against it
	Limit      int       // the sweep's limit; Due returns up to Limit+1 rows to reveal saturation
	Namespace  string    // only this namespace is claimed
	Owner      string    // lease owner stamped on claimed rows
	LeaseUntil time.Time // lease expiry stamped on claimed rows (after At)
	// MaxPerHost, when above 0, caps the claim per host (HostOf): at most
	// MaxPerHost - Busy[h] registrations of host h are claimed, none of a
	// host with Busy[h] >= MaxPerHost. Registrations left out by the cap
	// are not claimed and do not count towards More. 0 means no cap.
	MaxPerHost int
	// Busy is what the caller already has in flight per host (HostOf form);
	// read only when MaxPerHost > 0. Counts must not be negative.
	Busy map[string]int
}

// DueBatch is what Due claimed.
type DueBatch struct {
	Registrations []Status // claimed, each with its stream's head
	More          bool     // more than Limit were due: the sweep is saturated
	Unserved      int      // due registrations of other namespaces, not claimed
	// Hosts is the stored health of the claimed registrations' hosts that
	// are troubled (Host.Troubled): a worker tells the store of an answer
	// from these hosts only.
	Hosts []Host
}

// ListQuery filters Store.List.
type ListQuery struct {
	Stream    string // only this stream, if set
	Namespace string // only this namespace, if set
	Parked    bool   // only parked registrations
	Lagging   bool   // only registrations with records past the cursor (Lag > 0)
	After     Key    // keyset paging: registrations ordered after this key
	Limit     int    // 0 means 100
}

// DefaultListLimit and MaxListLimit bound ListQuery.Limit.
const (
	DefaultListLimit = 100
	MaxListLimit     = 10000
)

// Stats summarises registrations for `herald status` and metrics.
type Stats struct {
	Namespaces map[string]NamespaceStats `json:"namespaces"`
	// Lagging: up to MaxLagging registrations with the largest lag, largest
	// first.
	Lagging []Status `json:"lagging"`
	// OldestParked: the registration parked longest ago, if any.
	OldestParked *Status `json:"oldest_parked,omitempty"`
}

// NamespaceStats counts one namespace's registrations by state (see
// Status.State) and the records behind their cursors.
type NamespaceStats struct {
	Ready    int    `json:"ready"`
	Retrying int    `json:"retrying"`
	Idle     int    `json:"idle"`
	Parked   int    `json:"parked"`
	Leased   int    `json:"leased"` // of the above, those with a live lease at the instant asked
	Behind   uint64 `json:"records_behind"`
}

// Evidence is the stored record of a failed, skipped or parked attempt, or of
// an operator's action. Successes are not recorded: the cursor says them.
type Evidence struct {
	Stream       string        `json:"stream"`
	Registration string        `json:"registration"` // the registration id
	At           time.Time     `json:"at"`           // the sweep's instant, or the operator's
	Event        string        `json:"event"`        // one of the Event* constants
	Seq          uint64        `json:"seq,omitempty"`
	RecordID     string        `json:"record_id,omitempty"`
	MessageID    string        `json:"message_id,omitempty"`
	Attempt      int           `json:"attempt,omitempty"` // 1-based attempt at this seq
	Status       int           `json:"status,omitempty"`  // HTTP status, 0 if none came back
	Body         string        `json:"body,omitempty"`    // first 512 bytes of the answer, as valid UTF-8 (see Clean)
	Location     string        `json:"location,omitempty"`
	Duration     time.Duration `json:"duration_ns,omitempty"`
	Error        string        `json:"error,omitempty"` // why, in words; never a secret
	NotBefore    time.Time     `json:"not_before,omitzero"`
}

// Evidence events.
const (
	EventFailed   = "failed"   // a transient failure; retried at NotBefore
	EventSkipped  = "skipped"  // a message the receiver rejected, moved past by policy
	EventParked   = "parked"   // the failure that parked the registration
	EventUnparked = "unparked" // operator
	EventSkip     = "skip"     // operator moved the cursor forward
	EventRewind   = "rewind"   // operator moved the cursor back
)

// MaxEvidenceBody is how many bytes of a response body evidence keeps.
const MaxEvidenceBody = 512

// AllRegistrations pages through every registration s holds that matches q,
// after q.After, in the order List returns them (by stream, then id),
// MaxListLimit a page (q.Limit is its own). Errors are the store's.
func AllRegistrations(ctx context.Context, s Store, q ListQuery) ([]Status, error) {
	q.Limit = MaxListLimit
	return allPages(func(last *Status) ([]Status, error) {
		if last != nil {
			q.After = last.Key()
		}
		return s.List(ctx, q)
	})
}

// allPages reads a keyset-paged list to its end, MaxListLimit a page: page
// gets the last item read (nil first).
func allPages[T any](page func(last *T) ([]T, error)) ([]T, error) {
	var out []T
	var last *T
	for {
		p, err := page(last)
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
		if len(p) < MaxListLimit {
			return out, nil
		}
		last = &p[len(p)-1]
	}
}

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
