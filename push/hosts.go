package push

import (
	"context"
	"time"

	"github.com/heraldpush/herald/journal"
)

// Host health (DESIGN.md v2, "Hosts"; README, "Hosts"). A failure that says
// nothing about the record (Outcome.HostLevel) counts against the host, not
// the registration. After DefaultHostDownAfter in a row the host is down:
// its registrations are held (Due does not claim them, no attempt is
// charged, none is parked) but for one probe per window; any answer from the
// host brings it up and releases them all. Down past the horizon it is
// unavailable, probed every UnavailableProbeInterval.

// Host states, as Host.State reports them.
const (
	HostUp          = "up"
	HostDown        = "down"
	HostUnavailable = "unavailable"
)

// Host-health defaults, each with the reason it is what it is.
const (
	// DefaultHostDownAfter (3) host-level failures in a row make a host
	// down: one timeout is a blip, three in a row (usually of different
	// registrations of one sweep) is a host that is not there.
	DefaultHostDownAfter = 3
	// DefaultHostHorizon (7 days) is how long a host may be down before it
	// is unavailable: Mastodon's figure; long enough for a hobby server's
	// owner to come back from a holiday.
	DefaultHostHorizon = 7 * 24 * time.Hour
	// MinHostHorizon and MaxHostHorizon bound WithHostHorizon.
	MinHostHorizon = time.Hour
	MaxHostHorizon = 365 * 24 * time.Hour
	// UnavailableProbeInterval (1 h) is the probe interval of an
	// unavailable host: a host gone for a week is asked once an hour, 24
	// requests a day, so that it is found again within the hour it returns.
	UnavailableProbeInterval = time.Hour
	// probeFailures is the failure count the first probe's Backoff is keyed
	// at: the host has just failed DefaultHostDownAfter times, so the first
	// probe waits 4–8 s, then 8–16 s, doubling up to 128–256 s.
	probeFailures = 3
)

// Host is the stored health of one host (HostOf form, "example.com:443").
type Host struct {
	Host string `json:"host"`
	// State is HostUp, HostDown or HostUnavailable; Since is when it
	// entered it (the instant of the failure, answer or reset that did).
	State string    `json:"state"`
	Since time.Time `json:"since"`
	// Failures counts consecutive host-level failures (reset by any answer).
	Failures int `json:"failures"`
	// Probes counts the probes claimed since the host went down; it keys
	// the probe backoff.
	Probes int `json:"probes"`
	// NextProbeAt is when Due lets the next probe through (down or
	// unavailable hosts only).
	NextProbeAt time.Time `json:"next_probe_at,omitzero"`
	// LastError is the reason of the last host-level failure, and
	// LastFailureAt its instant. Hostile text (a receiver chose some of
	// it): cleaned like evidence, shown escaped.
	LastError     string    `json:"last_error,omitempty"`
	LastFailureAt time.Time `json:"last_failure_at,omitzero"`
	// Held counts the registrations held for the host (unparked, with
	// records past the cursor, host not up). Set by Hosts only.
	Held int `json:"held"`
}

// HostPolicy is what a worker passes with a host-level failure: how many in
// a row make the host down, and how long down makes it unavailable.
type HostPolicy struct {
	DownAfter int
	Horizon   time.Duration
}

// DefaultHostPolicy is DefaultHostDownAfter and DefaultHostHorizon.
func DefaultHostPolicy() HostPolicy {
	return HostPolicy{DownAfter: DefaultHostDownAfter, Horizon: DefaultHostHorizon}
}

// HostFailure is a host-level failure of a claimed registration's delivery,
// for HostStore.HostFailed.
type HostFailure struct {
	Claim    Claim    // fences the registration's write, as Retry's
	NextSeq  uint64   // the progress made before the failure
	Host     string   // HostOf the registration's URL
	Evidence Evidence // At and the attempt's answer; stored as EventHostFailed
	Policy   HostPolicy
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
	// HostFailed records a host-level failure in one atomic step: the
	// registration's turn ends without an attempt charged (cursor max(stored,
	// f.NextSeq), Attempts kept, or 0 if the cursor moved; HostFailures one
	// more, or 1 if it moved; NextAttemptAt the instant HostRetryAt gives
	// for that count; LastError the reason; lease released;
	// f.Evidence stored as EventHostFailed with that NotBefore), and the
	// host's health moves by Host.Failed. It returns the host as stored.
	// Errors: as Retry (ErrLeaseLost, ErrNotFound, ErrInvalid: also an empty
	// host or a policy out of range); on an error nothing changed.
	HostFailed(ctx context.Context, f HostFailure) (Host, error)

	// HostAnswered records that host answered at at (Host.Answered): up,
	// failures 0, and its held registrations released (due as their
	// NextAttemptAt says). A host never seen is left unstored. It returns
	// the host as stored. Errors: ErrInvalid (an empty host, a zero at).
	HostAnswered(ctx context.Context, host string, at time.Time) (Host, error)

	// ResetHost is the operator's release of a host: as HostAnswered, but
	// ErrNotFound for a host the store does not know.
	ResetHost(ctx context.Context, host string, at time.Time) (Host, error)

	// Hosts lists the stored hosts matching q, ordered by host, with Held
	// set. Errors: ErrInvalid (a limit out of range, an unknown state).
	Hosts(ctx context.Context, q HostQuery) ([]Host, error)
}

// EventHostFailed is the evidence of a host-level failure: no attempt was
// charged, and the registration is held while its host is down.
const EventHostFailed = "host-failed"

// Failed returns h after a host-level failure at at with reason: one more
// consecutive failure; up becomes down at p.DownAfter (Since at, the first
// probe at ProbeDelay(host, 0) later); down becomes unavailable once at is
// p.Horizon past Since (the next probe UnavailableProbeInterval after at).
// Stores call it so they all move the same way.
func (h Host) Failed(at time.Time, reason string, p HostPolicy) Host {
	if h.State == "" {
		h.State, h.Since = HostUp, at
	}
	h.Failures++
	h.LastError, h.LastFailureAt = cleanText(reason, MaxEvidenceError), at
	switch h.State {
	case HostUp:
		if h.Failures >= p.DownAfter {
			h.State, h.Since, h.Probes = HostDown, at, 0
			h.NextProbeAt = at.Add(ProbeDelay(h.Host, 0))
		}
	case HostDown:
		if !at.Before(h.Since.Add(p.Horizon)) {
			h.State, h.Since = HostUnavailable, at
			h.NextProbeAt = at.Add(UnavailableProbeInterval)
		}
	}
	return h
}

// Answered returns h after an answer (or an operator's reset) at at: up
// (Since at, if it was not), no failures, no probe pending. LastError and
// LastFailureAt stay, as history.
func (h Host) Answered(at time.Time) Host {
	if h.State != HostUp {
		h.State, h.Since = HostUp, at
	}
	h.Failures, h.Probes, h.NextProbeAt = 0, 0, time.Time{}
	return h
}

// Probed returns h after Due let a probe through at at: Probes counts one
// more, and the next probe is ProbeDelay(host, Probes) after at
// (UnavailableProbeInterval when unavailable).
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

// Troubled reports whether the host is not plainly up: down, unavailable,
// or with host-level failures counted. Workers tell the store of an answer
// from such a host only.
func (h Host) Troubled() bool { return h.State != HostUp || h.Failures > 0 }

// Transition names the change from old to h for operators (and for
// herald's own events): "down", "up", "unavailable", or "" for none.
func (h Host) Transition(old Host) string {
	if h.State == old.State || (old.State == "" && h.State == HostUp) {
		return ""
	}
	return h.State
}

// ProbeDelay is the wait before the next probe of a down host once n
// probes were let through (0 when it has just gone down):
// Backoff(host, "probe", n+3), 4–8 s, then 8–16 s, doubling to 128–256 s,
// with the jitter keyed by the host so that hosts that went down together
// are probed apart, on the same schedule on every run.
func ProbeDelay(host string, n int) time.Duration {
	return Backoff(host, "probe", max(n, 0)+probeFailures)
}

// HostRetryAt is when a registration whose delivery failed at at for its
// host is next due, failures being its HostFailures counting this one:
// Backoff(stream, id, failures-1) later. While the host is down it is held
// anyway; this spaces the retries of a registration on a host that is up
// (one path that times out while the others answer) as a charged failure
// would be, without the ceiling.
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
	if f.Policy.DownAfter < 1 {
		return journal.Invalid("host down after", "is %d: it must be at least 1", f.Policy.DownAfter)
	}
	if f.Policy.Horizon < MinHostHorizon || f.Policy.Horizon > MaxHostHorizon {
		return journal.Invalid("host horizon", "is %v: it must be from %v to %v", f.Policy.Horizon, MinHostHorizon, MaxHostHorizon)
	}
	return ValidateInstant("evidence at", f.Evidence.At)
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

// ValidateHost checks a host name given to HostAnswered or ResetHost: set,
// and no longer than a URL may be. Errors wrap journal.ErrInvalid.
func ValidateHost(host string) error {
	if host == "" {
		return journal.Invalid("host", "is empty")
	}
	if len(host) > MaxURLBytes {
		return journal.Invalid("host", "is longer than %d bytes", MaxURLBytes)
	}
	return nil
}

// AllHosts pages through every host hs keeps health for that matches q,
// after q.After, in the order Hosts lists them, MaxListLimit a page (q.Limit
// is its own). Errors are the store's.
func AllHosts(ctx context.Context, hs HostStore, q HostQuery) ([]Host, error) {
	q.Limit = MaxListLimit
	return allPages(func(last *Host) ([]Host, error) {
		if last != nil {
			q.After = last.Host
		}
		return hs.Hosts(ctx, q)
	})
}
