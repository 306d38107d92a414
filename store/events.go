package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
)

// herald's operational events (README, "herald's own events"): each change
// an operator wants to hear of appends one record to EventsStream in the
// store's transaction of the change. Stores build the records with
// RegistrationEvent and HostEvent, so every store writes the same bytes.

// EventsStream is the stream herald appends its operational events to; only
// herald appends under journal.ReservedPrefix.
const EventsStream = journal.ReservedPrefix + "events"

// Kinds of the operational events (the records' Kind), and what
// OperationalEvent's Cursor and Reason hold for each.
const (
	KindParked   = "herald.registration.parked"   // Reason: the failure; Cursor: the first unacknowledged seq
	KindUnparked = "herald.registration.unparked" // Cursor: where it resumes
	KindPaused   = "herald.registration.paused"   // By: the operator named; Reason: theirs; Cursor: where it stopped
	KindResumed  = "herald.registration.resumed"  // By: the operator named; Cursor: where it resumes
	KindResend   = "herald.registration.resend"   // an operator asked for a record again (Store.Resend). By: who; Cursor: the record's seq
	// KindCompleted: the final record was acknowledged and the registration
	// removed. Cursor: one past the final record; At: the completing
	// sweep's instant.
	KindCompleted = "herald.registration.completed"
	// KindSkipped: a cursor moved past records undelivered. ByOperator
	// (`herald skip`; Cursor: the new cursor; Reason: the operator's) or
	// ByPolicy (RejectSkip; Cursor: the record's seq; Reason: the answer).
	KindSkipped = "herald.registration.skipped"
	// KindExpired: Prune removed records the registration had not
	// acknowledged, older than its retention bound (Retention). FromSeq:
	// the first lost seq; Cursor: the new cursor, one past the last; By:
	// ByPolicy.
	KindExpired         = "herald.registration.expired"
	KindHostDown        = "herald.host.down" // Reason: the last host-level failure
	KindHostUp          = "herald.host.up"
	KindHostUnavailable = "herald.host.unavailable" // Reason: the last host-level failure
)

// Who skipped, in OperationalEvent.By.
const (
	ByOperator = "operator"
	ByPolicy   = "policy"
)

// OperationalEvent is the JSON payload of a record of EventsStream. Kind
// repeats the record's kind, so the payload says what it is on any wire.
// Text fields are data, never markup: Reason may quote a receiver (cleaned
// as evidence is, at most MaxEvidenceError bytes).
type OperationalEvent struct {
	Kind         string    `json:"kind"`                   // the record's kind, KindParked…
	Stream       string    `json:"stream,omitempty"`       // the registration's stream
	Registration string    `json:"registration,omitempty"` // the registration's id
	Namespace    string    `json:"namespace,omitempty"`
	Host         string    `json:"host,omitempty"` // HostOf form, "example.com:443"
	Cursor       uint64    `json:"cursor,omitempty"`
	FromSeq      uint64    `json:"from_seq,omitempty"` // expired events only
	By           string    `json:"by,omitempty"`       // skipped and expired: ByOperator or ByPolicy; paused, resumed, resend: who, as the operator named themself
	Reason       string    `json:"reason,omitempty"`
	At           time.Time `json:"at"` // the change's instant (the sweep's or the operator's), RFC 3339, UTC
}

// entry returns the record of an event of kind, its id derived from kind and
// payload: a repeated change is an idempotent append.
func (e OperationalEvent) entry(kind string) journal.Entry {
	e.Kind = kind
	e.Reason = cleanText(e.Reason, MaxEvidenceError)
	e.At = e.At.UTC()
	payload, err := json.Marshal(e)
	if err != nil {
		panic("store: an operational event does not encode: " + err.Error()) // plain fields: cannot happen
	}
	sum := sha256.Sum256(append([]byte(kind+"\n"), payload...))
	return journal.Entry{ID: journal.ReservedIDPrefix + hex.EncodeToString(sum[:16]), Kind: kind,
		ContentType: journal.DefaultContentType, Payload: payload}
}

// Reserved reports whether stream is one of herald's own (under
// journal.ReservedPrefix).
func Reserved(stream string) bool { return strings.HasPrefix(stream, journal.ReservedPrefix) }

// RegistrationEvent returns the record a store appends when registration r
// is parked, unparked, completed or skipped at at. ok is false for a
// registration of a reserved stream, which must not feed the stream it
// follows with events about itself (each one more record to fail on).
func RegistrationEvent(kind string, r Registration, cursor uint64, by, reason string, at time.Time) (e journal.Entry, ok bool) {
	if Reserved(r.Stream) {
		return journal.Entry{}, false
	}
	return OperationalEvent{Stream: r.Stream, Registration: r.ID, Namespace: r.Namespace, Host: r.Host(),
		Cursor: cursor, By: by, Reason: reason, At: at}.entry(kind), true
}

// HostEvent returns the record a store appends when a host moves from old
// to h (Host.Transition); ok is false when its state did not change. Every
// host gets them, even one serving only EventsStream: a down host's
// registrations are held, not failed, so its events cannot multiply.
func HostEvent(old, h Host) (e journal.Entry, ok bool) {
	var kind string
	switch h.Transition(old) {
	case HostDown:
		kind = KindHostDown
	case HostUnavailable:
		kind = KindHostUnavailable
	case HostUp:
		kind = KindHostUp
	default:
		return journal.Entry{}, false
	}
	ev := OperationalEvent{Host: h.Host, At: h.Since}
	if kind != KindHostUp {
		ev.Reason = h.LastError
	}
	return ev.entry(kind), true
}
