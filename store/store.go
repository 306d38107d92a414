// Package store is the contract for herald's stores (subpackages memory,
// sqlite, postgres): the Store a push.Worker drives (registrations, claims,
// cursors, leases, evidence, host health), the records and operational
// events it keeps, the rules every store applies (ChargeHost, HostRetryAt,
// the Validate functions), and Backend, retention and schema errors. It
// imports no other herald package but journal and seal (which secrets are
// sealed with), so that push and the stores both build on it.
// store/storetest is the conformance suite they all pass.
package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
)

// Listener hears the appends other processes make to a shared database
// (store/postgres: LISTEN/NOTIFY). Wait returns once some were numbered since
// the previous Wait, with the store's payload; after an error a caller opens
// a new Listener. Close releases it. A store that offers one has
// Listen(ctx) (Listener, error); the daemon wakes its workers on each Wait.
type Listener interface {
	Wait(ctx context.Context) (string, error)
	Close()
}

// Backend is what each store implements over one database.
type Backend interface {
	journal.Journal
	Store
	Retention
	Subscriber
	TokenStore
	ActorKeyStore
	HostSchemes
}

// HostSchemes keeps, on each host's row, the signature scheme the host
// accepted after refusing another (transport.SchemeMemory: the ActivityPub
// signer's double-knock), so that every worker of the database knocks a
// host once. A host with no row gets one, up, as HostFailed would make it;
// retention removes it as any host row.
type HostSchemes interface {
	// HostScheme returns host's scheme and when it was learned; "" and the
	// zero time for a host with none or no row. Errors: ErrInvalid
	// (ValidateHost).
	HostScheme(ctx context.Context, host string) (scheme string, at time.Time, err error)
	// SetHostScheme stores scheme for host, learned at at, leaving the
	// host's health as it was. Errors: ErrInvalid (CheckHostScheme); on an
	// error nothing changed.
	SetHostScheme(ctx context.Context, host, scheme string, at time.Time) error
}

// MaxSchemeBytes bounds a host's scheme name ("rfc9421", "cavage").
const MaxSchemeBytes = 32

// CheckHostScheme checks SetHostScheme's arguments: a valid host, a scheme
// of 1 to MaxSchemeBytes lowercase letters, digits and hyphens, a non-zero
// at. Errors wrap journal.ErrInvalid.
func CheckHostScheme(host, scheme string, at time.Time) error {
	if err := ValidateHost(host); err != nil {
		return err
	}
	if scheme == "" || len(scheme) > MaxSchemeBytes || strings.TrimLeft(scheme, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return journal.Invalid("scheme", "%q must be 1 to %d lowercase letters, digits and hyphens", scheme, MaxSchemeBytes)
	}
	return ValidateInstant("at", at)
}

// Errors of opening or migrating a database, wrapped with the versions
// involved; test them with errors.Is. A database that fails these checks is
// left unchanged.
var (
	// ErrSchemaBehind: the schema is older than this binary's.
	ErrSchemaBehind = errors.New("the database schema is behind this herald's: run `herald migrate up`")
	// ErrSchemaAhead: a newer herald migrated the database; never migrate
	// down what it wrote.
	ErrSchemaAhead = errors.New("database schema is newer than this herald binary: upgrade herald")
	// ErrNotHerald: another application's tables, or a file that is not
	// SQLite at all.
	ErrNotHerald = errors.New("not a herald database")
	// ErrSchemaDirty: the version table marks its version dirty
	// (golang-migrate's mark of a migration that did not finish; herald's
	// runner never sets it). The wrapping error says how to settle it.
	ErrSchemaDirty = errors.New("database schema is dirty: a migration did not finish")
	// ErrSchemaOtherBuild: the version is this binary's but the tables are
	// not: another build made the file. Before a release a store's schema is
	// one migration changed in place, so no step leads from one build's to
	// another's.
	ErrSchemaOtherBuild = errors.New("the database schema is another herald build's")
)

// Migration is one embedded schema migration of a SQL store.
type Migration struct {
	Version int    `json:"version"` // 1-based, contiguous: the NNN of its file names
	Name    string `json:"name"`    // e.g. "init", from the file name
	Applied bool   `json:"applied"` // Version <= the database's current version
}

// SchemaStatus is where a database's schema stands, as the SQL stores'
// MigrateUp, MigrateDown and MigrationStatus report it.
type SchemaStatus struct {
	Database   string      `json:"database"`        // the SQLite file's path, or the PostgreSQL database's name (never its URL)
	Current    int         `json:"current"`         // the version applied (0: none); when Dirty, the one marked dirty
	Latest     int         `json:"latest"`          // the newest migration this binary embeds
	Dirty      bool        `json:"dirty,omitempty"` // see ErrSchemaDirty
	Migrations []Migration `json:"migrations"`      // every embedded migration, oldest first
}

// Pending reports whether migrations remain to be applied.
func (s SchemaStatus) Pending() bool { return s.Current < s.Latest }

// CompareKeys orders keys by stream, then id, byte-wise (as SQL's COLLATE "C"
// and SQLite's BINARY do).
func CompareKeys(a, b Key) int {
	return cmp.Or(strings.Compare(a.Stream, b.Stream), strings.Compare(a.ID, b.ID))
}

// RecordNotFound is Lookup's error for a record id no store holds (and a
// scoped caller does not see).
func RecordNotFound(id string) error { return fmt.Errorf("record %q: %w", id, journal.ErrNotFound) }

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
func FirstCursor(r Registration, head, oldest uint64, sealed bool) (uint64, error) {
	next := cmp.Or(r.NextSeq, oldest)
	if err := CheckRetained(r.Stream, next, oldest); err != nil {
		return 0, err
	}
	if sealed && next > head {
		return 0, fmt.Errorf("register %s at #%d: %w", Name(r.Stream, r.ID), next,
			&journal.SealedError{Stream: r.Stream, FinalSeq: head})
	}
	return next, ValidateCursor(next, head)
}

// CheckMove checks an operator's skip (skip set) or rewind of a cursor from
// next to toSeq at instant at in a stream with the given head and low-water
// mark, and returns the evidence the move stores: event skip or rewind at
// seq next, its text the operator's reason for a skip (not empty, at most
// MaxEvidenceError bytes), where from and to for a rewind. Errors wrap
// journal.ErrInvalid (a *PrunedError below the low-water mark).
func CheckMove(skip bool, stream string, next, head, oldest, toSeq uint64, at time.Time, reason string) (Evidence, error) {
	event, check := EventSkip, ValidateSkip
	if skip {
		if err := journal.ValidateText("reason", reason, MaxEvidenceError); err != nil {
			return Evidence{}, err
		}
	} else {
		event, check, reason = EventRewind, ValidateRewind, fmt.Sprintf("rewound from #%d to #%d", next, toSeq)
	}
	if err := check(next, head, toSeq); err != nil {
		return Evidence{}, err
	}
	return Evidence{At: at, Event: event, Seq: next, Error: reason}, CheckRetained(stream, toSeq, oldest)
}

// ValidateRenew checks the arguments of Store.Renew and RenewResends: a
// set until and valid claims. Errors wrap journal.ErrInvalid.
func ValidateRenew[C interface{ Validate() error }](until time.Time, claims []C) error {
	if err := ValidateInstant("until", until); err != nil {
		return err
	}
	for _, c := range claims {
		if err := c.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// EvidenceLimit returns the effective limit of Store.Evidence:
// MaxEvidence for 0 or more than that. A negative limit is
// journal.ErrInvalid.
func EvidenceLimit(limit int) (int, error) {
	if limit < 0 {
		return 0, journal.Invalid("limit", "is %d: it must not be negative", limit)
	}
	return min(cmp.Or(limit, MaxEvidence), MaxEvidence), nil
}

// One returns the first of rows a SQL store read for one key, or missing
// if there is none; err, if any, first.
func One[T any](rows []T, err, missing error) (T, error) {
	if err == nil && len(rows) == 0 {
		err = missing
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return rows[0], nil
}

// ValidateSkip checks an operator's skip of a registration at cursor next in
// a stream whose head is head: next < toSeq <= head+1. Errors wrap
// journal.ErrInvalid.
func ValidateSkip(next, head, toSeq uint64) error {
	if next > head {
		return journal.Invalid("to_seq", "is %d: the cursor (#%d) is past the head (#%d), nothing to skip", toSeq, next, head)
	}
	if toSeq <= next || toSeq > head+1 {
		return journal.Invalid("to_seq", "is %d: a skip moves the cursor forward, from #%d to at most #%d (one past the head)", toSeq, next, head+1)
	}
	return nil
}

// ValidateRewind checks an operator's rewind of a registration at cursor
// next in a stream whose head is head: 1 <= toSeq <= next (a cursor is at
// most head+1). A rewind moves the cursor back, or keeps it (to retry at
// once); forward is a skip. Errors wrap journal.ErrInvalid.
func ValidateRewind(next, head, toSeq uint64) error {
	if toSeq < 1 || toSeq > min(next, head+1) {
		return journal.Invalid("to_seq", "is %d: a rewind moves the cursor back, to a seq from 1 to the cursor (#%d); a skip moves it forward", toSeq, min(next, head+1))
	}
	return nil
}

// DuePicker chooses what Due claims from the due registrations of
// q.Namespace, offered in claim order (oldest NextAttemptAt first, then by
// key): at most q.Limit, More when one more could have been claimed, each
// host within q.HostRoom, and of a host that holds its registrations
// (Host.Holds) only one, whose probe is due, which moves the host's
// next probe.
type DuePicker struct {
	Batch  DueBatch // the picks, and the troubled hosts of the picks, each once
	Probed []Host   // hosts whose probe a pick is, with their next probe moved: to store
	Capped bool     // a due registration was left for its host's cap: it is due still

	q     DueQuery
	hosts map[string]Host
	taken map[string]int
}

// NewDuePicker returns a picker for q given the stored health of the hosts
// that may be troubled (others are up).
func NewDuePicker(q DueQuery, hosts map[string]Host) *DuePicker {
	return &DuePicker{q: q, hosts: hosts, taken: map[string]int{}}
}

// HostsAtCap returns the hosts q gives no room (DueQuery.HostRoom 0),
// sorted: a store leaves their registrations out of what it reads, so that
// a claim does not read, at each turn's end, every registration waiting
// for a busy host (issue 37).
func HostsAtCap(q DueQuery) []string {
	var out []string
	for h := range q.Busy {
		if q.HostRoom(h) == 0 {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

// Offer considers the next due registration, of host (its HostOf), and
// returns false once the batch is full (More is set: stop offering).
func (p *DuePicker) Offer(st Status, host string) bool {
	h, stored := p.hosts[host]
	held, probe := h.Holds(p.q.At)
	if held && !probe {
		return true // held until the host's next probe: not More
	}
	if room := p.q.HostRoom(host); room >= 0 && p.taken[host] >= room {
		p.Capped = true
		return true // left for a turn's end by the cap: not More
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

// Retention keeps a store's journal and evidence bounded. Its rules, for
// each stream, at the caller's instant q.At:
//
//   - The low-water mark (StreamInfo.OldestSeq) rises past a record only
//     when it was appended at or before q.At - q.Retain and every
//     registration of the stream, parked ones included, has acknowledged it
//     or held it longer than its bound (Registration.RetainBound: appended
//     at or before q.At - the bound). Retained records are the contiguous
//     run OldestSeq..Head.
//   - A registration whose cursor the low-water mark passes (a parked one,
//     one of an unavailable host, any that fell that far behind) has its
//     cursor moved to the mark in the same step, Attempts and HostFailures
//     reset, parked or not as before, with an EventExpired evidence row and
//     a KindExpired operational event naming the lost seqs (Expired): the
//     loss is never silent.
//   - A stream with no registration keeps its records for the retention
//     age, and its head, so later appends continue its seqs.
//   - A sealed stream with no registration left is removed entirely once its
//     final record is older than the retention age; its name and record ids
//     may then be used again.
//   - Evidence older than the retention age is removed, except a parked
//     registration's newest "parked" row: why it is parked.
//   - A host's health (Host) is removed once no registration is of
//     the host and its last failure (or, with none, its Since) is older than
//     the retention age: the call that ends a pass (More false) removes
//     them, so that a pass reads the registrations' hosts once.
//   - Rewinds, skips and new registrations below the low-water mark are
//     refused with a *PrunedError.
type Retention interface {
	// Prune removes what the rules allow, at most q.Limit records, and
	// reports it; call it again while the report says More. A dry run
	// changes nothing. Errors: journal.ErrInvalid for a bad query.
	Prune(ctx context.Context, q PruneQuery) (PruneReport, error)
	// Streams lists streams by name (StreamQuery says which).
	Streams(ctx context.Context, q StreamQuery) ([]StreamInfo, error)
}

// Holder is one registration's hold on its stream's records, as Prune reads
// it: its cursor and its bound (Registration.RetainBound).
type Holder struct {
	NextSeq   uint64
	RetainMax time.Duration
}

// Holds says which records of one stream Retention's rules keep at q.At
// given its registrations' holds; the zero value (no query) keeps nothing
// back beyond the age.
type Holds struct {
	cutoff, at time.Time
	seqs       []uint64        // the holders' cursors, ascending
	bounds     []time.Duration // bounds[i]: the longest bound of the holders seqs[0..i]
}

// Holds returns the rules for a stream whose registrations hold what
// holders say.
func (q PruneQuery) Holds(holders []Holder) Holds {
	hs := slices.SortedFunc(slices.Values(holders), func(a, b Holder) int { return cmp.Compare(a.NextSeq, b.NextSeq) })
	h := Holds{cutoff: q.Cutoff(), at: q.At, seqs: make([]uint64, len(hs)), bounds: make([]time.Duration, len(hs))}
	var longest time.Duration
	for i, x := range hs {
		longest = max(longest, x.RetainMax)
		h.seqs[i], h.bounds[i] = x.NextSeq, longest
	}
	return h
}

// Prunable reports whether the record seq, appended at appended, may go:
// older than the retention age, and older than the bound of every holder
// whose cursor has not passed it.
func (h Holds) Prunable(seq uint64, appended time.Time) bool {
	if appended.After(h.cutoff) {
		return false
	}
	n, _ := slices.BinarySearch(h.seqs, seq+1) // holders with cursor <= seq
	return n == 0 || !appended.After(h.at.Add(-h.bounds[n-1]))
}

// Expired returns what a store records when Prune moves registration r's
// cursor past lost records, from r.NextSeq to the new low-water mark to, at
// at: the EventExpired evidence and the KindExpired operational event (ok
// false for a registration of a reserved stream, as RegistrationEvent).
func Expired(r Registration, to uint64, at time.Time) (ev Evidence, e journal.Entry, ok bool) {
	reason := fmt.Sprintf("records #%d to #%d were pruned unacknowledged: older than the retention bound (retain_max %v)",
		r.NextSeq, to-1, r.RetainBound())
	ev = Evidence{Stream: r.Stream, Registration: r.ID, At: at, Event: EventExpired, Seq: r.NextSeq, Error: reason}
	if Reserved(r.Stream) {
		return ev, journal.Entry{}, false
	}
	return ev, OperationalEvent{Stream: r.Stream, Registration: r.ID, Namespace: r.Namespace, Host: r.Host(),
		FromSeq: r.NextSeq, Cursor: to, By: ByPolicy, Reason: reason, At: at}.entry(KindExpired), true
}

// DefaultRetain is herald run's and herald prune's retention age: a week of
// replay for an operator who rewinds after a receiver lost data (Lemmy and
// River keep as long).
const DefaultRetain = 7 * 24 * time.Hour

// DefaultPruneBatch bounds the records one Prune call removes, so that a
// batch holds its locks for milliseconds beside appends and sweeps.
const DefaultPruneBatch = 1000

// MaxPruneBatch bounds PruneQuery.Limit.
const MaxPruneBatch = 100000

// PruneQuery asks Retention.Prune for one batch.
type PruneQuery struct {
	At     time.Time     // the caller's instant: records appended at or before At-Retain may go
	Retain time.Duration // the retention age; 0 removes records as soon as every registration acknowledged them
	Limit  int           // records removed at most in this call; 0 means DefaultPruneBatch
	DryRun bool          // report what one whole pass would remove (Limit ignored), change nothing
}

// Validate checks q and returns it with its defaults. Errors wrap
// journal.ErrInvalid.
func (q PruneQuery) Validate() (PruneQuery, error) {
	switch {
	case q.At.IsZero():
		return q, journal.Invalid("at", "is the zero time")
	case q.Retain < 0:
		return q, journal.Invalid("retain", "is %v: it must be 0 or more", q.Retain)
	case q.Limit < 0 || q.Limit > MaxPruneBatch:
		return q, journal.Invalid("limit", "is %d: it must be from 1 to %d (0 means %d)", q.Limit, MaxPruneBatch, DefaultPruneBatch)
	}
	switch {
	case q.DryRun:
		q.Limit = math.MaxInt // a dry run reports a whole pass: batches would see the same records again
	case q.Limit == 0:
		q.Limit = DefaultPruneBatch
	}
	return q, nil
}

// Cutoff is the newest appended-at a prunable record may have.
func (q PruneQuery) Cutoff() time.Time { return q.At.Add(-q.Retain) }

// PruneReport says what one Prune call removed (or, dry, would remove).
type PruneReport struct {
	Streams  int   `json:"streams"`          // streams whose low-water mark rose
	Records  int   `json:"records"`          // records removed
	Bytes    int64 `json:"bytes"`            // their payload bytes
	Removed  int   `json:"streams_removed"`  // sealed, completed streams removed entirely
	Evidence int   `json:"evidence_removed"` // evidence rows removed
	Hosts    int   `json:"hosts_removed"`    // host rows removed: no registration, no failure for the retention age
	More     bool  `json:"more"`             // the batch was full: call again
}

// Add sums two reports (More is either's).
func (r PruneReport) Add(o PruneReport) PruneReport {
	return PruneReport{Streams: r.Streams + o.Streams, Records: r.Records + o.Records, Bytes: r.Bytes + o.Bytes,
		Removed: r.Removed + o.Removed, Evidence: r.Evidence + o.Evidence, Hosts: r.Hosts + o.Hosts, More: r.More || o.More}
}

// StreamQuery filters Retention.Streams.
type StreamQuery struct {
	Stream string // only this stream, if set
	After  string // keyset paging: streams ordered after this name
	Limit  int    // 0 means DefaultListLimit, at most MaxListLimit
}

// Validate checks q and returns its effective limit. Errors wrap
// journal.ErrInvalid.
func (q StreamQuery) Validate() (int, error) {
	if q.Stream != "" {
		if err := journal.ValidateStream(q.Stream); err != nil {
			return 0, err
		}
	}
	return ListLimit(q.Limit)
}

// StreamInfo is one stream as herald streams shows it.
type StreamInfo struct {
	Stream        string `json:"stream"`
	Head          uint64 `json:"head"`           // seq of the newest record, 0 if none
	FinalSeq      uint64 `json:"final_seq"`      // seq of the final record, 0 while unsealed
	OldestSeq     uint64 `json:"oldest_seq"`     // the oldest retained seq; Head+1 when none is retained
	Registrations int    `json:"registrations"`  // registrations of the stream, parked ones included
	Records       uint64 `json:"records"`        // records retained: Head - OldestSeq + 1
	Bytes         int64  `json:"retained_bytes"` // payload bytes retained
	// Unnumbered counts the records committed but not yet numbered
	// (Unnumbered): past Head once numbered. A stream with only such
	// records is listed, with Head 0.
	Unnumbered uint64 `json:"unnumbered"`
}

// Fill returns i with what follows from Head and OldestSeq: Records, and
// FinalSeq if the stream is sealed.
func (i StreamInfo) Fill(sealed bool) StreamInfo {
	i.Records = i.Head + 1 - i.OldestSeq
	if sealed {
		i.FinalSeq = i.Head
	}
	return i
}

// PrunedError refuses a cursor below a stream's low-water mark (a rewind, a
// skip, a new registration). It is a journal.ErrInvalid.
type PrunedError struct {
	Stream    string
	Seq       uint64 // the seq asked for
	OldestSeq uint64 // the oldest retained seq
}

func (e *PrunedError) Error() string {
	return fmt.Sprintf("stream %q retains records from #%d on: #%d was pruned (past the retention age, and acknowledged by every registration, followed by none, or held past a retain-max)",
		e.Stream, e.OldestSeq, e.Seq)
}

// Is makes errors.Is(err, journal.ErrInvalid) true.
func (e *PrunedError) Is(target error) bool { return target == journal.ErrInvalid }

// CheckRetained returns a *PrunedError if seq is below oldest.
func CheckRetained(stream string, seq, oldest uint64) error {
	if seq < oldest {
		return &PrunedError{Stream: stream, Seq: seq, OldestSeq: oldest}
	}
	return nil
}
