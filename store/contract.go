package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldpush/herald/journal"
)

// Store keeps registrations, their cursors, leases and evidence. It is safe
// for concurrent use, by several processes where the database allows it
// (store/postgres). Errors wrap journal's sentinels: ErrInvalid for bad input
// (nothing changed), ErrNotFound for an unknown registration; the database's
// own failures otherwise. store/storetest states the contract method by
// method; every implementation runs it.
//
// Park, Unpark, Complete, Skip, AddEvidence of an EventSkipped row and
// HostStore's state changes append herald's operational event to
// EventsStream in the same atomic step (events.go), and only if they apply.
type Store interface {
	// Register creates the registration, or updates the destination (URL,
	// namespace, config, policy, kinds, window) of an existing one, keeping
	// its cursor and retry state, and returns it as stored. An update that
	// removes a rate drops its pace (PacedUntil), and one that waited for
	// the pace alone is due at once; one that moves it to another host
	// drops what its old host held (HostFailures 0; due at once if it
	// waited for that host). An update that changes how it is
	// delivered (Registration.SameDelivery) takes the lease from a turn in
	// flight (LeaseOwner "", so that its writes and renewals fail with
	// ErrLeaseLost) but keeps its end (LeaseUntil), so that the registration
	// is claimed again under what the update set only once that turn can no
	// longer send, never beside it; Subscriber.Subscribe does the same to
	// the registrations of a subscription it changes so. A stored config
	// that no longer opens counts as changed. A new one starts
	// at r.NextSeq (0: the oldest record the stream retains), due at once.
	// Errors: ErrInvalid (Registration.Validate; a new cursor past head+1, or
	// below the low-water mark: a *PrunedError), ErrSealed (the cursor
	// is past the sealed stream's final record).
	Register(ctx context.Context, r Registration) (Registration, error)

	// Update is Register that applies r only if what is stored is still
	// what was read, checked in the same atomic step (CheckUpdate): a
	// compare-and-swap for a read-modify-write, so that a change made
	// meanwhile, by any process, is never lost. was is the registration as
	// Get returned it (r a changed copy): its settings must be unchanged;
	// or the zero Registration, Get having found none: r is created only if
	// none exists. Errors: as Register's; ErrNotFound (was set, the
	// registration gone); ErrConflict (naming the registration) when it
	// changed or was created since the read, and nothing changed.
	Update(ctx context.Context, r, was Registration) (Registration, error)

	// Unregister deletes a registration, its evidence and its pending
	// resends. Errors: ErrNotFound.
	Unregister(ctx context.Context, stream, id string) error

	// Get returns one registration with its stream's head. Errors: ErrNotFound.
	Get(ctx context.Context, stream, id string) (Status, error)

	// List returns registrations matching q, ordered by (stream, id), at most
	// q.Limit after q.After.
	List(ctx context.Context, q ListQuery) ([]Status, error)

	// Due claims up to q.Limit registrations of q.Namespace with work at q.At
	// (not parked, no live lease, NextAttemptAt <= At, NextSeq <= head),
	// oldest NextAttemptAt first so that none starves, and stamps each, in
	// the same atomic step, with the lease (q.Owner, q.LeaseUntil) and
	// NextAttemptAt = q.At; each Status says Lapsed if the lease it took
	// had lapsed rather than been released. More says a q.Limit+1st was
	// due (not claimed); Unserved counts due registrations of other
	// namespaces if q.CountUnserved. The per-host cap applies when
	// q.MaxPerHost > 0. Errors: ErrInvalid (DueQuery.Validate).
	Due(ctx context.Context, q DueQuery) (DueBatch, error)

	// Advance saves a turn's progress and releases its lease, fenced by the
	// claim (Claim): the cursor becomes max(stored, nextSeq), and if it moved,
	// Attempts, HostFailures and LastError are reset; NextAttemptAt stays.
	// Errors: ErrLeaseLost, ErrNotFound, ErrInvalid (nextSeq 0 or past
	// head+1, an invalid claim).
	Advance(ctx context.Context, c Claim, nextSeq uint64) error

	// Checkpoint is Advance keeping the lease as Due stamped it, so that the
	// turn goes on to its next page; it ends with Advance, Retry, Park or
	// Complete under the same claim. Errors: as Advance.
	Checkpoint(ctx context.Context, c Claim, nextSeq uint64) error

	// Pace records under claim c that the registration's next burst may
	// not start before until (Registration.Rate): PacedUntil = until, and
	// NextAttemptAt = until if that is later; the lease is kept for the
	// write that ends the turn. Errors: ErrLeaseLost, ErrNotFound,
	// ErrInvalid (a zero until, an invalid claim).
	Pace(ctx context.Context, c Claim, until time.Time) error

	// Renew extends to until the lease of each claim whose owner still
	// holds it, and returns those renewed; the others (taken over, released,
	// gone) are left alone. A turn's lease is renewed while it runs, so a
	// lease can be short. Errors: ErrInvalid (a zero until, an invalid claim);
	// on an error nothing changed.
	Renew(ctx context.Context, until time.Time, claims []Claim) ([]Claim, error)
	// Retry records a failed attempt with the progress made before it, in
	// one atomic step fenced by the claim: the cursor max(stored, nextSeq);
	// Attempts 1 if that moved it, else Attempts+1; NextAttemptAt notBefore;
	// LastError ev.Error; the lease released; ev stored (Evidence.Clean, its
	// Stream and Registration from c). Errors: as Advance; ErrInvalid for a
	// zero notBefore or ev.At.
	Retry(ctx context.Context, c Claim, nextSeq uint64, notBefore time.Time, ev Evidence) error

	// Park records a failure as Retry does but, instead of scheduling a
	// retry, stops the registration, keeping its cursor: Parked, ParkedAt =
	// ev.At. Errors: as Retry.
	Park(ctx context.Context, c Claim, nextSeq uint64, ev Evidence) error

	// Unpark resumes a parked registration at its cursor: Attempts 0, due at
	// at, an "unparked" evidence row; one not parked is left alone. Errors:
	// ErrNotFound, ErrInvalid (a zero at).
	Unpark(ctx context.Context, stream, id string, at time.Time) error

	// Pause is an operator's stop (Registration.Paused): never claimed
	// until Resume, the lease cleared, an "paused" evidence row and a
	// KindPaused event naming by and reason; one paused is left alone.
	// Errors: ErrNotFound, ErrInvalid (a zero at, ValidatePause).
	Pause(ctx context.Context, stream, id string, at time.Time, by, reason string) error

	// Resume ends a pause (and a failure park with it) at the cursor:
	// Attempts 0, due at at, a "resumed" evidence row and a KindResumed
	// event; one not paused is left alone. Errors: as Pause.
	Resume(ctx context.Context, stream, id string, at time.Time, by string) error

	// Resend asks for record seq, one the registration acknowledged, to be
	// delivered to it again, out of band (resend.go): pending until a worker
	// claims it (DueResends) and sends it once (Resent); the cursor, the
	// attempts and a pause or park are left alone. A herald.registration.resend
	// event names by. The same seq pending already is left alone, and
	// queued is false. Errors: ErrNotFound, ErrInvalid (a zero at,
	// ValidatePause's by, CheckResend: seq 0, not behind the cursor or of a
	// kind the registration does not want; below the low-water mark, a
	// *PrunedError).
	Resend(ctx context.Context, stream, id string, seq uint64, at time.Time, by string) (queued bool, err error)

	// DueResends claims up to q.Limit pending resends of q.Namespace's
	// registrations whose lease is free at q.At, oldest asked first,
	// stamping each with the lease (q.Owner, q.LeaseUntil) in the same atomic
	// step; More says a q.Limit+1st was pending. MaxPerHost, Busy and
	// CountUnserved are not read. Errors: ErrInvalid (DueQuery.Validate).
	DueResends(ctx context.Context, q DueQuery) (ResendBatch, error)

	// RenewResends is Renew for claimed resends. Errors: as Renew.
	RenewResends(ctx context.Context, until time.Time, claims []ResendClaim) ([]ResendClaim, error)

	// Resent ends a claimed resend in one atomic step fenced by its claim:
	// the pending resend deleted and ev stored as its evidence (Event
	// EventResent, Seq c.Seq, Stream and Registration from c; Clean).
	// Errors: ErrLeaseLost (no longer pending under c.Owner), ErrNotFound,
	// ErrInvalid (an invalid claim, a zero ev.At).
	Resent(ctx context.Context, c ResendClaim, ev Evidence) error

	// Complete deletes a registration whose final record was acknowledged,
	// with its evidence and pending resends, fenced by the claim. Errors: ErrLeaseLost,
	// ErrNotFound.
	Complete(ctx context.Context, c Claim) error

	// Skip is the operator's move past a poison record: the cursor forward to
	// toSeq (NextSeq < toSeq <= head+1), Attempts 0, due at at, the lease
	// cleared, an evidence row saying reason; a parked registration stays
	// parked. Errors: ErrNotFound, ErrInvalid (toSeq out of range, a zero at).
	Skip(ctx context.Context, stream, id string, toSeq uint64, at time.Time, reason string) error

	// Rewind is the operator's replay, the only backward move of a cursor: to
	// toSeq (1 <= toSeq <= the cursor), Attempts 0, due at at, the lease
	// cleared, an evidence row. Errors: ErrNotFound, ErrInvalid (toSeq out of
	// range, a zero at; below the low-water mark, a *PrunedError).
	Rewind(ctx context.Context, stream, id string, toSeq uint64, at time.Time) error

	// AddEvidence stores one evidence row, keeping the newest MaxEvidence per
	// registration. Errors: ErrNotFound.
	AddEvidence(ctx context.Context, ev Evidence) error

	// Evidence returns a registration's evidence, newest first, at most limit
	// rows (0: MaxEvidence). Errors: ErrNotFound.
	Evidence(ctx context.Context, stream, id string, limit int) ([]Evidence, error)

	// Stats counts registrations by namespace and state at instant at (which
	// decides what is leased), and the records waiting to be numbered.
	Stats(ctx context.Context, at time.Time) (Stats, error)

	HostStore
}

// Claim is what a worker holds while it serves a registration Due claimed:
// its key and the lease owner Due stamped. Writes under a claim (Advance,
// Checkpoint, Retry, Park, Complete, HostFailed) apply only while that owner
// holds the lease, so a turn that outlived its lease can undo neither another
// worker's progress nor an operator's rewind.
type Claim struct {
	Stream string
	ID     string
	Owner  string
}

// Claim returns the claim a registration returned by Due carries.
func (r Registration) Claim() Claim { return Claim{Stream: r.Stream, ID: r.ID, Owner: r.LeaseOwner} }

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

// ErrLeaseLost is returned by a write whose claim no longer holds the lease
// (another worker claimed it after the lease expired, or an operator
// unparked, skipped or rewound it). The holder now repeats the work; the
// worker drops its turn quietly.
var ErrLeaseLost = errors.New("lease lost: another worker or an operator took the registration over")

// LeaseLost is the ErrLeaseLost of a write under c, naming it.
func (c Claim) LeaseLost() error {
	return fmt.Errorf("registration %s, claim %s: %w", Name(c.Stream, c.ID), c.Owner, ErrLeaseLost)
}

// Store limits. MaxEvidence (100 rows a registration, the newest) shows a
// pattern of failures without letting a receiver down for a month grow the
// table without bound; the text limits are in bytes (Evidence.Clean).
const (
	MaxEvidence         = 100
	MaxEvidenceBody     = 512
	MaxEvidenceError    = 2048
	MaxEvidenceLocation = 2048
	DefaultListLimit    = 100   // ListQuery.Limit 0
	MaxListLimit        = 10000 // ListQuery.Limit at most
	MaxLagging          = 10    // Stats.Lagging at most
)

// DueQuery asks Store.Due for work.
type DueQuery struct {
	At         time.Time // the sweep's instant: due-ness and lease expiry are judged against it
	Limit      int       // Due looks for Limit+1 rows, to reveal saturation
	Namespace  string    // only this namespace is claimed
	Owner      string    // lease owner stamped on claimed rows
	LeaseUntil time.Time // lease expiry stamped on claimed rows (after At)
	// MaxPerHost above 0 caps the claim per host (HostOf): MaxPerHost -
	// Busy[h] registrations of host h at most. Those left out are not
	// claimed and do not count towards More.
	MaxPerHost int
	Busy       map[string]int // in flight per host already; read only with MaxPerHost > 0
	// CountUnserved asks for DueBatch.Unserved, which reads the other
	// namespaces' due registrations: RunOnce's report has it; Run's claims,
	// many a second, do without.
	CountUnserved bool
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
// take: -1 (unbounded) without a cap.
func (q DueQuery) HostRoom(host string) int {
	if q.MaxPerHost <= 0 {
		return -1
	}
	return max(q.MaxPerHost-q.Busy[host], 0)
}

// DueBatch is what Due claimed.
type DueBatch struct {
	Registrations []Status // claimed, each with its stream's head
	More          bool     // more than Limit were due: the sweep is saturated
	Unserved      int      // due registrations of other namespaces, not claimed (counted only if DueQuery.CountUnserved)
	Hosts         []Host   // the claimed registrations' troubled hosts (Host.Troubled)
}

// ListQuery filters Store.List.
type ListQuery struct {
	Stream    string // only this stream, if set
	Namespace string // only this namespace, if set
	Parked    bool   // only parked or paused registrations
	Lagging   bool   // only registrations with records past the cursor (Lag > 0)
	// Subscription: only the registrations the subscription of this prefix
	// materialised (with Stream unset; ID too, or any id if empty).
	Subscription string
	ID           string // with Subscription: only this id
	After        Key    // keyset paging: registrations ordered after this key
	Limit        int    // 0 means DefaultListLimit
}

// ListLimit returns the effective limit of a ListQuery: DefaultListLimit for
// 0; ErrInvalid below 0 or above MaxListLimit.
func ListLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultListLimit, nil
	case limit < 0 || limit > MaxListLimit:
		return 0, journal.Invalid("limit", "is %d: it must be from 1 to %d", limit, MaxListLimit)
	}
	return limit, nil
}

// AllRegistrations pages through every registration matching q after
// q.After, in List's order, MaxListLimit a page (q.Limit is ignored).
// Errors are the store's.
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

// Stats summarises registrations for `herald status` and metrics.
type Stats struct {
	Namespaces   map[string]NamespaceStats `json:"namespaces"`
	Lagging      []Status                  `json:"lagging"`                 // the MaxLagging largest lags, largest first
	OldestParked *Status                   `json:"oldest_parked,omitempty"` // parked longest ago, if any
	// Unnumbered counts the records committed but not yet numbered (a store
	// that numbers after the commit: store/postgres). No cursor is behind
	// them yet, so no Behind counts them.
	Unnumbered Unnumbered `json:"unnumbered"`
}

// Unnumbered is what waits to be numbered: Records of Streams, the oldest
// appended at Oldest (zero when none waits).
type Unnumbered struct {
	Records uint64    `json:"records"`
	Streams int       `json:"streams"`
	Oldest  time.Time `json:"oldest_appended_at,omitzero"`
}

// NamespaceStats counts one namespace's registrations by Status.State and
// the records behind their cursors.
type NamespaceStats struct {
	Ready    int    `json:"ready"`
	Retrying int    `json:"retrying"`
	Idle     int    `json:"idle"`
	Parked   int    `json:"parked"`
	Paused   int    `json:"paused"` // operator-stopped (Pause), not counted in Parked
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
	Body         string        `json:"body,omitempty"`    // the answer's first MaxEvidenceBody bytes
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
	EventPaused   = "paused"   // operator: Error says who and why
	EventResumed  = "resumed"  // operator: Error says who
	EventSkip     = "skip"     // operator moved the cursor forward
	EventRewind   = "rewind"   // operator moved the cursor back
	EventExpired  = "expired"  // Prune moved the cursor past records older than the retention bound (Retention)
	EventResent   = "resent"   // a record sent again out of band (Store.Resend): Status its answer, Error who asked and why it failed (ResentText)
)

// Clean returns ev with its text fields storable anywhere, as every store
// writes them: valid UTF-8 (invalid bytes and NUL, which PostgreSQL text
// refuses, become U+FFFD) cut at a rune boundary to the MaxEvidence* limits.
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

// ValidateInstant checks that an instant a store is asked to record is set.
// Errors wrap journal.ErrInvalid.
func ValidateInstant(field string, t time.Time) error {
	if t.IsZero() {
		return journal.Invalid(field, "is the zero time")
	}
	return nil
}

// AdvanceBatcher is a Store that saves many turns' progress in one round
// trip. A worker on one coalesces its turns' Advance calls (group commit:
// while one batch is saved the next gathers; no timer).
type AdvanceBatcher interface {
	// AdvanceBatch applies Advance to every save as one atomic step: errs
	// holds, in order, what Advance would have returned for each alone (a
	// save that failed changed nothing). err is the database's failure:
	// nothing applied, errs nil.
	AdvanceBatch(ctx context.Context, saves []CursorSave) (errs []error, err error)
}

// CursorSave is one Advance of a batch: the claim and the cursor reached.
type CursorSave struct {
	Claim   Claim
	NextSeq uint64
}

// MaxOperatorName bounds who paused, resumed or asked for a resend
// (Store.Pause's by).
const MaxOperatorName = 256

// ValidatePause checks what Pause, Resume and Resend record: by set, at most
// MaxOperatorName bytes, and with reason at most MaxEvidenceError bytes of
// UTF-8 without control characters. Errors wrap journal.ErrInvalid, naming "by" or "reason".
func ValidatePause(by, reason string) error {
	if by == "" {
		return journal.Invalid("by", "is empty: say who asks")
	}
	if len(by) > MaxOperatorName {
		return journal.Invalid("by", "is longer than %d bytes", MaxOperatorName)
	}
	if len(reason) > MaxEvidenceError {
		return journal.Invalid("reason", "is longer than %d bytes (%d), as evidence is", MaxEvidenceError, len(reason))
	}
	for field, v := range map[string]string{"by": by, "reason": reason} {
		if !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0 {
			return journal.Invalid(field, "must be UTF-8 text without control characters")
		}
	}
	return nil
}

// PauseText is the evidence and last error of a pause: "paused by BY: REASON".
func PauseText(by, reason string) string {
	if reason == "" {
		return "paused by " + by
	}
	return "paused by " + by + ": " + reason
}
