package operator

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/heraldpush/herald/push"
)

// Status is the plane at a glance, as herald status and the page's
// overview show it.
type Status struct {
	// HeldTruncated: only the first MaxHeldScan registrations with work
	// were read to count the held ones (SplitHeld).
	HeldTruncated bool                     `json:"held_truncated"`
	Hosts         HostSummary              `json:"hosts"`
	Lagging       []RegistrationView       `json:"lagging"` // the largest lags, largest first
	Namespaces    map[string]NamespaceView `json:"namespaces"`
	OldestParked  *RegistrationView        `json:"oldest_parked"`
	Held          Held                     `json:"-"`
}

// Names are the namespaces' names, sorted.
func (s Status) Names() []string { return slices.Sorted(maps.Keys(s.Namespaces)) }

// NamespaceView is one namespace's counts: Store.Stats', with those held
// for their host moved out of ready and retrying into Held.
type NamespaceView struct {
	push.NamespaceStats
	Held int `json:"held"`
}

// StatusAt reads the Status at instant at. Errors are the store's.
func StatusAt(ctx context.Context, s push.Store, at time.Time) (Status, error) {
	st, err := s.Stats(ctx, at)
	if err != nil {
		return Status{}, err
	}
	hs, err := push.AllHosts(ctx, s, push.HostQuery{})
	if err != nil {
		return Status{}, err
	}
	out := Status{Hosts: SummarizeHosts(hs), Held: HeldOf(hs), Namespaces: map[string]NamespaceView{}}
	held, truncated, err := SplitHeld(ctx, s, st.Namespaces, out.Held)
	if err != nil {
		return Status{}, err
	}
	out.HeldTruncated, out.Lagging = truncated, out.Held.Views(st.Lagging)
	for ns, c := range st.Namespaces {
		out.Namespaces[ns] = NamespaceView{c, held[ns]}
	}
	if p := st.OldestParked; p != nil {
		v := out.Held.View(*p)
		out.OldestParked = &v
	}
	return out, nil
}

// MaxHeldScan bounds the registrations SplitHeld reads.
const MaxHeldScan = 100_000

// SplitHeld moves the registrations held for their host out of the ready
// and retrying counts of namespaces, where Store.Stats counts them, and
// returns how many each namespace holds. It reads the lagging registrations
// only when a host is not up, at most MaxHeldScan of them; past that
// truncated is true. Stats and List are two reads, so under change the
// counts are approximate, never negative.
func SplitHeld(ctx context.Context, s push.Store, namespaces map[string]push.NamespaceStats, notUp Held) (held map[string]int, truncated bool, err error) {
	held = map[string]int{}
	if len(notUp) == 0 {
		return held, false, nil
	}
	q := push.ListQuery{Lagging: true, Limit: push.MaxListLimit}
	for scanned := 0; ; {
		page, err := s.List(ctx, q)
		if err != nil {
			return nil, false, err
		}
		for _, r := range page {
			c, ok := namespaces[r.Namespace]
			if !ok || notUp[r.Host()] == "" || r.Parked || r.Lag() == 0 {
				continue
			}
			held[r.Namespace]++
			if r.State() == push.StateRetrying {
				c.Retrying = max(c.Retrying-1, 0)
			} else {
				c.Ready = max(c.Ready-1, 0)
			}
			namespaces[r.Namespace] = c
		}
		scanned += len(page)
		if len(page) < q.Limit {
			return held, false, nil
		}
		if scanned >= MaxHeldScan {
			return held, true, nil
		}
		q.After = page[len(page)-1].Key()
	}
}

// HostSummary counts the hosts herald keeps health for (those that ever
// failed for their host) by state, and lists the first MaxNotUp not up.
type HostSummary struct {
	Up          int         `json:"up"`
	Down        int         `json:"down"`
	Unavailable int         `json:"unavailable"`
	Held        int         `json:"held"` // registrations held by the hosts not up
	NotUp       []push.Host `json:"not_up"`
}

// MaxNotUp bounds HostSummary.NotUp: herald hosts lists them all.
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
