package store

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldpush/herald/journal"
)

// Host health: package doc, and README, "Hosts".

// Host states, as Host.State reports them.
const (
	HostUp          = "up"
	HostDown        = "down"
	HostUnavailable = "unavailable"
)

// Host health: the threshold, the defaults and bounds, each with the reason
// it is what it is.
const (
	// HostDownAfter is how many host-level failures in a row (3) bring an
	// up host down: one timeout is a blip, three in a row (usually of
	// different registrations) is a host that is not there.
	HostDownAfter = 3
	// HostDownSpan (10 s) is how long a run of failures that the host
	// answered (a gateway's 502, 503, 504) must last, no 2xx of the host
	// between them, before the host is down: one path's registrations
	// failing together say nothing of a host whose other registrations
	// answer 2xx in the meantime (an answer ends the run); a proxy that
	// answers 503 for every path for 10 s does. A host with one such
	// registration goes down at its fifth failure, about 8 s of backoff on.
	HostDownSpan = 10 * time.Second
	// DefaultHostHorizon (7 days, Mastodon's figure) is how long a host may
	// be down before it is unavailable: a hobby server's owner's holiday.
	DefaultHostHorizon = 7 * 24 * time.Hour
	MinHostHorizon     = time.Hour            // bounds a horizon (CheckHostHorizon)
	MaxHostHorizon     = 365 * 24 * time.Hour // bounds a horizon (CheckHostHorizon)
	// UnavailableProbeInterval (1 h) probes an unavailable host 24 times a
	// day, so that it is found again within the hour it returns.
	UnavailableProbeInterval = time.Hour
)

// Host is the stored health of one host (HostOf form, "example.com:443").
type Host struct {
	Host        string    `json:"host"`
	State       string    `json:"state"`                  // HostUp, HostDown or HostUnavailable
	Since       time.Time `json:"since"`                  // the failure, answer or reset that set State
	Failures    int       `json:"failures"`               // consecutive host-level failures; any answer resets it
	Probes      int       `json:"probes"`                 // probes claimed since the host went down; keys ProbeDelay
	NextProbeAt time.Time `json:"next_probe_at,omitzero"` // when Due lets the next probe through (not up only)
	// LastError and LastFailureAt are the last host-level failure's reason
	// (cleaned as evidence is: a receiver chose some of it) and instant.
	LastError     string    `json:"last_error,omitempty"`
	LastFailureAt time.Time `json:"last_failure_at,omitzero"`
	// FailingSince is the first failure of the current run (zero with no
	// failures counted): the run must span HostDownSpan to bring it down.
	FailingSince time.Time `json:"failing_since,omitzero"`
	// Held counts the registrations held for the host (unparked, with work,
	// host not up); set by Hosts only.
	Held int `json:"held"`
	// Scheme is the signature scheme the host accepted after refusing
	// another, learned at SchemeAt (HostSchemes); set by Hosts only.
	Scheme   string    `json:"signature_scheme,omitempty"`
	SchemeAt time.Time `json:"scheme_at,omitzero"`
}

// HostFailure is a host-level failure of a claimed registration's delivery.
type HostFailure struct {
	Claim    Claim         // fences the registration's write, as Retry's
	NextSeq  uint64        // the progress made before the failure
	Host     string        // HostOf the registration's URL
	Evidence Evidence      // At and the attempt's answer; stored as EventHostFailed
	Horizon  time.Duration // how long down makes the host unavailable (WithHostHorizon)
}

// HostQuery filters HostStore.Hosts.
type HostQuery struct {
	Host  string // only this host, if set
	State string // only hosts in this state, if set
	After string // keyset paging: hosts ordered (byte-wise) after this one
	Limit int    // 0 means DefaultListLimit; at most MaxListLimit
}

// HostStore is the part of a Store that keeps host health, shared by every
// worker of the database. store/storetest states the contract.
type HostStore interface {
	// HostFailed records a host-level failure in one atomic step, fenced by
	// f.Claim and charging no attempt: the cursor max(stored, f.NextSeq);
	// Attempts kept (0 if the cursor moved); HostFailures one more (1 if it
	// moved); NextAttemptAt from HostRetryAt, or PacedUntil if that is later
	// (a rate's next burst); LastError the reason; the lease
	// released; f.Evidence stored as EventHostFailed with that NotBefore; the
	// host moved by Host.Failed and returned as stored. Errors: as Retry, and
	// ErrInvalid (HostFailure.Validate); on an error nothing changed.
	HostFailed(ctx context.Context, f HostFailure) (Host, error)

	// HostAnswered records that host answered at at (Host.Answered),
	// releasing its held registrations, and returns it as stored; a host
	// never seen stays unstored. Errors: ErrInvalid (ValidateHost, a zero at).
	HostAnswered(ctx context.Context, host string, at time.Time) (Host, error)

	// ResetHost is the operator's HostAnswered. Errors: as HostAnswered;
	// ErrNotFound for a host the store does not know.
	ResetHost(ctx context.Context, host string, at time.Time) (Host, error)

	// Hosts lists the stored hosts matching q, ordered by host, with Held
	// set. Errors: ErrInvalid (HostQuery.Validate).
	Hosts(ctx context.Context, q HostQuery) ([]Host, error)
}

// EventHostFailed is the evidence of a host-level failure: no attempt was
// charged, and the registration is held while its host is down.
const EventHostFailed = "host-failed"

// Failed returns h after the host-level failure ev (its At, Error and
// Status), for every store to move alike: one more failure in the run; up
// becomes down at HostDownAfter in a row (first probe ProbeDelay(host, 0)
// later), where a failure the host answered (a gateway's 502, 503 or 504)
// also needs the run to span HostDownSpan; down becomes unavailable horizon
// after Since.
func (h Host) Failed(ev Evidence, horizon time.Duration) Host {
	at := ev.At
	if h.State == "" {
		h.State, h.Since = HostUp, at
	}
	if h.Failures == 0 || h.FailingSince.IsZero() {
		h.FailingSince = at
	}
	h.Failures++
	h.LastError, h.LastFailureAt = cleanText(ev.Error, MaxEvidenceError), at
	switch h.State {
	case HostUp:
		// No answer says the host is not there; an answer says a proxy is, and
		// only a run that no answer of another path broke says more.
		spanned := ev.Status == 0 || !at.Before(h.FailingSince.Add(HostDownSpan))
		if h.Failures >= HostDownAfter && spanned {
			h.State, h.Since, h.Probes = HostDown, at, 0
			h.NextProbeAt = at.Add(ProbeDelay(h.Host, 0))
		}
	case HostDown:
		if !at.Before(h.Since.Add(horizon)) {
			h.State, h.Since = HostUnavailable, at
			h.NextProbeAt = at.Add(UnavailableProbeInterval)
		}
	}
	return h
}

// Answered returns h after an answer (or an operator's reset) at at: up, no
// failures, no probe pending; LastError and LastFailureAt stay, as history.
func (h Host) Answered(at time.Time) Host {
	if h.State != HostUp {
		h.State, h.Since = HostUp, at
	}
	h.Failures, h.Probes, h.NextProbeAt, h.FailingSince = 0, 0, time.Time{}, time.Time{}
	return h
}

// Answer is what HostAnswered (reset false) or ResetHost makes of host,
// stored as old if found, at at: old.Answered(at); for a host not stored,
// up since at (and not stored by an answer), or journal.ErrNotFound for a
// reset.
func Answer(host string, old Host, found, reset bool, at time.Time) (Host, error) {
	switch {
	case !found && reset:
		return Host{}, fmt.Errorf("host %q: %w", host, journal.ErrNotFound)
	case !found:
		return Host{Host: host, State: HostUp, Since: at}, nil
	}
	return old.Answered(at), nil
}

// Probed returns h after Due let a probe through at at: one more probe, the
// next ProbeDelay (UnavailableProbeInterval when unavailable) later.
func (h Host) Probed(at time.Time) Host {
	h.Probes++
	if h.State == HostUnavailable {
		h.NextProbeAt = at.Add(UnavailableProbeInterval)
	} else {
		h.NextProbeAt = at.Add(ProbeDelay(h.Host, h.Probes))
	}
	return h
}

// Holds reports whether Due holds the host's registrations at at (down or
// unavailable), and whether one probe may go through now.
func (h Host) Holds(at time.Time) (held, probe bool) {
	if h.State != HostDown && h.State != HostUnavailable {
		return false, false
	}
	return true, !h.NextProbeAt.After(at)
}

// HeldTo is where a host's change from old moves the next attempt of its
// unparked registrations, so that a claim's index range leaves a held one
// out instead of reading and passing over it at every claim (issue 37:
// nothing in a claim may cost in proportion to the registrations not
// served). Held (down or unavailable, with a probe instant): each whose
// next attempt is earlier moves to h.NextProbeAt (hold). Released (up
// again): each still at old's probe instant is due at h.Since (release,
// with from = old.NextProbeAt). Otherwise none moves.
func (h Host) HeldTo(old Host) (hold bool, from, to time.Time) {
	held := func(x Host) bool {
		return (x.State == HostDown || x.State == HostUnavailable) && !x.NextProbeAt.IsZero()
	}
	switch {
	case held(h):
		return true, time.Time{}, h.NextProbeAt
	case held(old) && h.State == HostUp:
		return false, old.NextProbeAt, h.Since
	}
	return false, time.Time{}, time.Time{}
}

// Troubled reports whether the host is down, unavailable, or has failures
// counted. Workers tell the store of an answer from such a host only.
func (h Host) Troubled() bool { return h.State != HostUp || h.Failures > 0 }

// Transition names the change from old to h: "down", "up", "unavailable",
// or "" for none.
func (h Host) Transition(old Host) string {
	if h.State == old.State || (old.State == "" && h.State == HostUp) {
		return ""
	}
	return h.State
}

// ProbeDelay is the wait before the next probe of a down host once n probes
// were let through: Backoff(host, "probe", n+3), 4–8 s doubling to 128–256
// s, keyed by the host so that hosts that went down together are probed apart.
func ProbeDelay(host string, n int) time.Duration {
	return Backoff(host, "probe", max(n, 0)+HostDownAfter) // the host has just failed HostDownAfter times
}

// ChargeHost is what a store records of a host-level failure at cursor next
// against the registration (stream, id) whose stored cursor is storedNext,
// with storedFailures host failures counted there: ev as a host-failed row
// (EventHostFailed, attempt 0, NotBefore from HostRetryAt) and the count
// after it, 1 when the failure's cursor moved past the stored one.
func ChargeHost(stream, id string, ev Evidence, next, storedNext uint64, storedFailures int) (Evidence, int) {
	failures := storedFailures + 1
	if next > storedNext {
		failures = 1
	}
	ev.Event, ev.Attempt, ev.NotBefore = EventHostFailed, 0, HostRetryAt(stream, id, failures, ev.At)
	return ev, failures
}

// HostRetryAt is when a registration whose delivery failed at at for its host
// is next due, failures counting this one: Backoff(stream, id, failures-1)
// later, so that one path that times out on a host that answers the others
// is retried ever more slowly, never parked.
func HostRetryAt(stream, id string, failures int, at time.Time) time.Time {
	return at.Add(Backoff(stream, id, failures-1))
}

// Validate checks a HostFailure. Errors wrap journal.ErrInvalid.
func (f HostFailure) Validate() error {
	if err := f.Claim.Validate(); err != nil {
		return err
	}
	if f.Host == "" {
		return journal.Invalid("host", "is empty")
	}
	if err := CheckHostHorizon("host horizon", f.Horizon); err != nil {
		return err
	}
	return ValidateInstant("evidence at", f.Evidence.At)
}

// CheckHostHorizon refuses a host horizon (WithHostHorizon,
// HostFailure.Horizon) outside MinHostHorizon to MaxHostHorizon, naming it
// field. Errors wrap journal.ErrInvalid.
func CheckHostHorizon(field string, d time.Duration) error {
	if d < MinHostHorizon || d > MaxHostHorizon {
		return journal.Invalid(field, "is %v: it must be from %v to %v", d, MinHostHorizon, MaxHostHorizon)
	}
	return nil
}

// Validate checks a HostQuery and returns its effective limit. Errors wrap
// journal.ErrInvalid.
func (q HostQuery) Validate() (int, error) {
	switch q.State {
	case "", HostUp, HostDown, HostUnavailable:
	default:
		return 0, journal.Invalid("state", "%q must be %q, %q or %q", q.State, HostUp, HostDown, HostUnavailable)
	}
	return ListLimit(q.Limit)
}

// ValidateHost checks a host given to HostAnswered or ResetHost: set, at
// most MaxURLBytes. Errors wrap journal.ErrInvalid.
func ValidateHost(host string) error {
	if host == "" {
		return journal.Invalid("host", "is empty")
	}
	if len(host) > MaxURLBytes {
		return journal.Invalid("host", "is longer than %d bytes", MaxURLBytes)
	}
	return nil
}

// AllHosts pages through every host matching q after q.After, as
// AllRegistrations does. Errors are the store's.
func AllHosts(ctx context.Context, hs HostStore, q HostQuery) ([]Host, error) {
	q.Limit = MaxListLimit
	return allPages(func(last *Host) ([]Host, error) {
		if last != nil {
			q.After = last.Host
		}
		return hs.Hosts(ctx, q)
	})
}
