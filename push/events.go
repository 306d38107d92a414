package push

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
)

// herald's operational events (README, "herald's own events"). Each change
// an operator wants to hear of appends one record to EventsStream, in the
// store's transaction of the change: the event exists exactly when the
// change does. Operators register on the stream like on any other, with
// any projection; retention applies to it as to any stream.
//
// Stores build the records with RegistrationEvent and HostEvent, so that
// every store writes the same bytes.

// EventsStream is the stream herald appends its operational events to. Its
// name is under journal.ReservedPrefix: only herald appends to it.
const EventsStream = journal.ReservedPrefix + "events"

// Kinds of the operational events (the records' Kind).
const (
	// KindParked: a registration was parked (OperationalEvent.Reason: the
	// failure that parked it; Cursor: the first unacknowledged seq).
	KindParked = "herald.registration.parked"
	// KindUnparked: an operator unparked a registration (Cursor: where it
	// resumes).
	KindUnparked = "herald.registration.unparked"
	// KindCompleted: a registration's final record was acknowledged and the
	// registration removed (Cursor: one past the final record; At: the
	// instant of the sweep whose claim completed it, which stores keep as
	// the claim's NextAttemptAt).
	KindCompleted = "herald.registration.completed"
	// KindSkipped: a cursor moved past records without delivering them. By
	// says who: ByOperator (`herald skip`, Cursor: the new cursor, Reason:
	// the operator's) or ByPolicy (on-rejected=skip passed a message the
	// receiver rejected; Cursor: the seq of its record, Reason: the
	// receiver's answer).
	KindSkipped = "herald.registration.skipped"
	// KindHostDown, KindHostUp, KindHostUnavailable: a host changed state
	// (Reason: its last host-level failure, for down and unavailable).
	KindHostDown        = "herald.host.down"
	KindHostUp          = "herald.host.up"
	KindHostUnavailable = "herald.host.unavailable"
)

// Who skipped, in OperationalEvent.By.
const (
	ByOperator = "operator"
	ByPolicy   = "policy"
)

// OperationalEvent is the JSON payload of a record of EventsStream. Kind
// repeats the record's kind, so that the payload says what it is on any
// wire and in any shape (a webhook without its envelope, a copy kept by a
// receiver). Every text field is data, never markup: Reason may hold what
// a receiver answered (cleaned as evidence is, valid UTF-8, at most
// MaxEvidenceError bytes), and JSON escapes it.
type OperationalEvent struct {
	Kind         string    `json:"kind"`                   // the record's kind, KindParked…
	Stream       string    `json:"stream,omitempty"`       // the registration's stream
	Registration string    `json:"registration,omitempty"` // the registration's id
	Namespace    string    `json:"namespace,omitempty"`
	Host         string    `json:"host,omitempty"` // HostOf form, "example.com:443"
	Cursor       uint64    `json:"cursor,omitempty"`
	By           string    `json:"by,omitempty"` // ByOperator or ByPolicy, skipped events only
	Reason       string    `json:"reason,omitempty"`
	At           time.Time `json:"at"` // the change's instant (the sweep's or the operator's), RFC 3339, UTC
}

// entry returns the record of an event of kind: its id is derived from the
// kind and the payload, so that the same change gives the same id (and a
// repeated change is an idempotent append) and two changes never share one.
func (e OperationalEvent) entry(kind string) journal.Entry {
	e.Kind = kind
	e.Reason = cleanText(e.Reason, MaxEvidenceError)
	e.At = e.At.UTC()
	payload, err := json.Marshal(e)
	if err != nil {
		panic("push: an operational event does not encode: " + err.Error()) // plain fields: cannot happen
	}
	sum := sha256.Sum256(append([]byte(kind+"\n"), payload...))
	return journal.Entry{ID: journal.ReservedIDPrefix + hex.EncodeToString(sum[:16]), Kind: kind,
		ContentType: journal.DefaultContentType, Payload: payload}
}

// Reserved reports whether stream is one of herald's own (under
// journal.ReservedPrefix).
func Reserved(stream string) bool { return strings.HasPrefix(stream, journal.ReservedPrefix) }

// RegistrationEvent returns the record a store appends, in the transaction
// of the change, when registration r is parked, unparked, completed or
// skipped at at. ok is false for a registration of a reserved stream: a
// registration on EventsStream that parks must not feed the stream it
// follows with events about itself (each would be one more record for it
// to fail on), so changes to those are told by evidence and logs only.
func RegistrationEvent(kind string, r Registration, cursor uint64, by, reason string, at time.Time) (e journal.Entry, ok bool) {
	if Reserved(r.Stream) {
		return journal.Entry{}, false
	}
	return OperationalEvent{Stream: r.Stream, Registration: r.ID, Namespace: r.Namespace, Host: r.Host(),
		Cursor: cursor, By: by, Reason: reason, At: at}.entry(kind), true
}

// HostEvent returns the record a store appends, in the transaction of the
// change, when a host's health moves from old to h (Host.Transition); ok is
// false when it did not change state. Host events are written for every
// host, including one that serves only EventsStream: each is one state
// change, and a down host's registrations are held, not failed, so the
// events about it cannot multiply.
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
