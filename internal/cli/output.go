package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/push"
)

// printJSON writes v as indented JSON and a newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table is the CLI's text table (internal/table, shared with the demo).
type table struct{ *tbl.Table }

func newTable(w io.Writer, header ...string) *table { return &table{tbl.New(w, header...)} }

func (t *table) row(cells ...string) { t.Row(cells...) }

func (t *table) flush() error { return t.Flush() }

// cell makes s safe for one table cell (see table.Cell).
func cell(s string) string { return tbl.Cell(s) }

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// registrationView is a registration as the CLI and the admin API show it:
// everything but the config, which holds secrets.
type registrationView struct {
	Stream        string    `json:"stream"`
	ID            string    `json:"id"`
	Namespace     string    `json:"namespace"`
	Host          string    `json:"host"`
	URL           string    `json:"url"`
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

func viewOf(s push.Status) registrationView {
	return registrationView{
		Stream: s.Stream, ID: s.ID, Namespace: s.Namespace, Host: s.Host(), URL: redactURL(s.URL),
		OnRejected: string(s.OnRejected), Kinds: s.Kinds, Window: max(s.Window, 1), NextSeq: s.NextSeq, Head: s.Head, Lag: s.Lag(), Attempts: s.Attempts,
		HostFailures: s.HostFailures, NextAttemptAt: s.NextAttemptAt, State: s.State(), Parked: s.Parked, ParkedAt: s.ParkedAt,
		LastError: s.LastError, LeaseOwner: s.LeaseOwner, LeaseUntil: s.LeaseUntil, Sealed: s.Sealed,
	}
}

// redactURL shows a destination URL without what may be a credential: the
// query (often a capability token) becomes "?…", and every path segment of
// 16 bytes or more (the token of a capability URL such as
// /api/webhooks/<id>/<token>) becomes "…", as the transport redacts them in
// evidence. Scheme, host and short path segments stay, so an operator can
// still tell receivers apart.
func redactURL(raw string) string {
	rest, query, hasQuery := strings.Cut(raw, "?")
	scheme, path, ok := strings.Cut(rest, "://")
	if !ok {
		path, scheme = rest, ""
	}
	segs := strings.Split(path, "/")
	for i := 1; i < len(segs); i++ { // segs[0] is the host
		if len(segs[i]) >= 16 {
			segs[i] = "…"
		}
	}
	out := strings.Join(segs, "/")
	if ok {
		out = scheme + "://" + out
	}
	if hasQuery && query != "" {
		out += "?…"
	}
	return out
}

// heldBy maps each host that is not up to its state (down, unavailable):
// the registrations with work on those hosts are held (README, "Hosts").
type heldBy map[string]string

// notUpHosts reads heldBy from the store.
func notUpHosts(ctx context.Context, hs push.HostStore) (heldBy, error) {
	held := heldBy{}
	for _, state := range []string{push.HostDown, push.HostUnavailable} {
		list, err := allHosts(ctx, hs, push.HostQuery{State: state})
		if err != nil {
			return nil, err
		}
		for _, h := range list {
			held[h.Host] = h.State
		}
	}
	return held, nil
}

// viewHeld is viewOf, with State "held" for a registration that has work
// on a host that is not up.
func viewHeld(s push.Status, held heldBy) registrationView {
	v := viewOf(s)
	if state := held[v.Host]; state != "" && !s.Parked && s.Lag() > 0 {
		v.State, v.HeldFor = "held", state
	}
	return v
}

func printRegistrations(w io.Writer, asJSON bool, sts []push.Status, held heldBy) error {
	views := make([]registrationView, len(sts))
	for i, s := range sts {
		views[i] = viewHeld(s, held)
	}
	if asJSON {
		return printJSON(w, views)
	}
	t := newTable(w, "STREAM", "ID", "NAMESPACE", "HOST", "KINDS", "WINDOW", "CURSOR", "HEAD", "LAG", "ATTEMPTS", "NEXT ATTEMPT", "STATE", "LAST ERROR")
	for _, v := range views {
		kinds := "all"
		if len(v.Kinds) > 0 {
			kinds = strings.Join(v.Kinds, ",")
		}
		state := v.State
		if v.HeldFor != "" {
			state = "held: host " + v.HeldFor
		}
		t.row(v.Stream, v.ID, v.Namespace, v.Host, kinds, fmt.Sprint(v.Window), fmt.Sprint(v.NextSeq), fmt.Sprint(v.Head), fmt.Sprint(v.Lag),
			fmt.Sprint(v.Attempts), fmtTime(v.NextAttemptAt), state, v.LastError)
	}
	return t.flush()
}
