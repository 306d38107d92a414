package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/push"
)

// RegistrationView is a registration as the APIs (and the CLI) show it:
// everything but the config, which holds secrets. Times are RFC 3339, UTC;
// absent when zero.
type RegistrationView struct {
	Stream        string    `json:"stream"`
	ID            string    `json:"id"`
	Namespace     string    `json:"namespace"`
	Host          string    `json:"host"`
	URL           string    `json:"url"` // redacted: see RedactURL
	OnRejected    string    `json:"on_4xx,omitempty"`
	Kinds         []string  `json:"kinds,omitempty"` // the record kinds it wants; absent: every kind
	Window        int       `json:"window"`          // messages that may be unacknowledged at once (1: strict order)
	NextSeq       uint64    `json:"next_seq"`
	Head          uint64    `json:"head"`
	Lag           uint64    `json:"lag"`
	Attempts      int       `json:"attempts"`
	HostFailures  int       `json:"host_failures,omitempty"` // host-level failures at the cursor: never charged (README, "Hosts")
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	State         string    `json:"state"`              // ready, retrying, idle, parked, or held (for its host: HeldFor says why)
	HeldFor       string    `json:"held_for,omitempty"` // the host's state (down, unavailable) when State is held
	Parked        bool      `json:"parked"`
	ParkedAt      time.Time `json:"parked_at,omitzero"`
	LastError     string    `json:"last_error,omitempty"`
	LeaseOwner    string    `json:"lease_owner,omitempty"`
	LeaseUntil    time.Time `json:"lease_until,omitzero"`
	Sealed        bool      `json:"sealed"`
}

// ViewOf returns s as shown, without its config and with its URL redacted.
func ViewOf(s push.Status) RegistrationView {
	return RegistrationView{
		Stream: s.Stream, ID: s.ID, Namespace: s.Namespace, Host: s.Host(), URL: RedactURL(s.URL),
		OnRejected: string(s.OnRejected), Kinds: s.Kinds, Window: max(s.Window, 1), NextSeq: s.NextSeq, Head: s.Head, Lag: s.Lag(), Attempts: s.Attempts,
		HostFailures: s.HostFailures, NextAttemptAt: s.NextAttemptAt, State: s.State(), Parked: s.Parked, ParkedAt: s.ParkedAt,
		LastError: s.LastError, LeaseOwner: s.LeaseOwner, LeaseUntil: s.LeaseUntil, Sealed: s.Sealed,
	}
}

// Held maps each host that is not up to its state (down, unavailable):
// the registrations with work on those hosts are held (README, "Hosts").
type Held map[string]string

// HeldHosts reads Held from the store.
func HeldHosts(ctx context.Context, hs push.HostStore) (Held, error) {
	held := Held{}
	for _, state := range []string{push.HostDown, push.HostUnavailable} {
		list, err := push.AllHosts(ctx, hs, push.HostQuery{State: state})
		if err != nil {
			return nil, err
		}
		for _, h := range list {
			held[h.Host] = h.State
		}
	}
	return held, nil
}

// View is ViewOf, with State "held" for a registration that has work on a
// host that is not up.
func (held Held) View(s push.Status) RegistrationView {
	v := ViewOf(s)
	if state := held[v.Host]; state != "" && !s.Parked && s.Lag() > 0 {
		v.State, v.HeldFor = "held", state
	}
	return v
}

// SplitHeld is page.SplitHeld: herald status and the operator's page count
// held registrations alike.
func SplitHeld(ctx context.Context, store push.Store, namespaces map[string]push.NamespaceStats, held Held) (map[string]int, bool, error) {
	return page.SplitHeld(ctx, store, namespaces, held)
}

// MaxHeldScan bounds the registrations SplitHeld reads (page.MaxHeldScan).
const MaxHeldScan = page.MaxHeldScan

// HostSummary counts hosts by state (of the hosts herald keeps health for:
// those that ever failed for their host) and lists the first MaxNotUp
// that are not up.
type HostSummary struct {
	Up          int         `json:"up"`
	Down        int         `json:"down"`
	Unavailable int         `json:"unavailable"`
	Held        int         `json:"held"` // registrations held by the hosts not up
	NotUp       []push.Host `json:"not_up"`
}

// MaxNotUp bounds HostSummary.NotUp: a summary, not a listing (herald
// hosts lists them all).
const MaxNotUp = 10

// SummarizeHosts returns the summary of hs.
func SummarizeHosts(hs []push.Host) HostSummary {
	sum := HostSummary{NotUp: []push.Host{}}
	for _, h := range hs {
		switch h.State {
		case push.HostDown:
			sum.Down++
		case push.HostUnavailable:
			sum.Unavailable++
		default:
			sum.Up++
			continue
		}
		sum.Held += h.Held
		if len(sum.NotUp) < MaxNotUp {
			sum.NotUp = append(sum.NotUp, h)
		}
	}
	return sum
}

// RedactURL shows a destination URL without what may be a credential: the
// query (often a capability token) becomes "?…", and every path segment of
// 16 bytes or more (the token of a capability URL such as
// /api/webhooks/<id>/<token>) becomes "…", as the transport redacts them in
// evidence. Scheme, host and short path segments stay, so an operator can
// still tell receivers apart.
//
// It is page.RedactURL: the operator's page and the APIs redact alike.
func RedactURL(raw string) string { return page.RedactURL(raw) }

// WindowNote says, when a registration's window is above maxPerHost, that
// a worker has at most maxPerHost of its messages in flight, since each
// holds one of its host's tokens; "" otherwise. whose names the cap
// ("this daemon's", "the default").
func WindowNote(window, maxPerHost int, whose string) string {
	if window <= maxPerHost {
		return ""
	}
	return fmt.Sprintf("window %d is above %s --max-per-host (%d), which caps a worker's messages in flight to one host: "+
		"%d of this registration's are sent at a time unless the workers run with --max-per-host %d", window, whose, maxPerHost, maxPerHost, window)
}
