package page

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// StateHeld is the state the page (like herald registrations) shows for a
// registration with work on a host that is down or unavailable.
const StateHeld = "held"

// regView is a registration as the page shows it: no config (it holds
// secrets), the URL redacted.
type regView struct {
	Stream, ID, Namespace, Host, URL string
	Kinds                            []string
	Window                           int
	NextSeq, Head, Lag               uint64
	Attempts, HostFailures           int
	NextAttemptAt, ParkedAt          time.Time
	State, HeldFor, LastError        string
	LeaseOwner                       string
	LeaseUntil                       time.Time
	Sealed, Parked                   bool
	Link                             string // the registration's view, relative to the prefix
}

// heldBy maps each host that is not up to its state.
type heldBy map[string]string

func (held heldBy) view(s push.Status) regView {
	v := regView{Stream: s.Stream, ID: s.ID, Namespace: s.Namespace, Host: s.Host(), URL: RedactURL(s.URL),
		Kinds: s.Kinds, Window: max(s.Window, 1), NextSeq: s.NextSeq, Head: s.Head, Lag: s.Lag(),
		Attempts: s.Attempts, HostFailures: s.HostFailures, NextAttemptAt: s.NextAttemptAt, ParkedAt: s.ParkedAt,
		State: s.State(), LastError: s.LastError, LeaseOwner: s.LeaseOwner, LeaseUntil: s.LeaseUntil,
		Sealed: s.Sealed, Parked: s.Parked, Link: regLink(s.Stream, s.ID)}
	if state := held[v.Host]; state != "" && !s.Parked && s.Lag() > 0 {
		v.State, v.HeldFor = StateHeld, state
	}
	return v
}

func regLink(stream, id string) string {
	return "registration?" + url.Values{"stream": {stream}, "id": {id}}.Encode()
}

// RedactURL shows a destination URL without what may be a credential: the
// query (often a capability token) becomes "?…", and every path segment of
// 16 bytes or more (the token of a capability URL such as
// /api/webhooks/<id>/<token>) becomes "…", as the transport redacts them in
// evidence. Scheme, host and short path segments stay, so an operator can
// still tell receivers apart. daemon.RedactURL (the APIs, the CLI) is this.
func RedactURL(raw string) string {
	rest, query, hasQuery := strings.Cut(raw, "?")
	scheme, path, ok := strings.Cut(rest, "://")
	if !ok {
		path, scheme = rest, ""
	}
	segs := strings.Split(path, "/")
	for i := 1; i < len(segs); i++ {
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

func (p *Page) held(ctx context.Context) (heldBy, []push.Host, error) {
	held := heldBy{}
	var notUp []push.Host
	for _, state := range []string{push.HostDown, push.HostUnavailable} {
		hs, err := push.AllHosts(ctx, p.store, push.HostQuery{State: state})
		if err != nil {
			return nil, nil, err
		}
		for _, h := range hs {
			held[h.Host] = h.State
		}
		notUp = append(notUp, hs...)
	}
	return held, notUp, nil
}

// nsRow is one namespace on the overview.
type nsRow struct {
	Name                                string
	Ready, Retrying, Held, Parked, Idle int
	Leased                              int
	Behind                              uint64
	Rate, Lag                           chart
	ReadyLink, RetryingLink, HeldLink   string
	ParkedLink, IdleLink, NamespaceLink string
}

// MaxHeldScan bounds the registrations SplitHeld reads to split held ones
// out of ready and retrying when a host is not up.
const MaxHeldScan = 100_000

// SplitHeld moves the registrations held for their host (work on a host
// that notUp maps to its state, down or unavailable; not parked) out of the
// ready and retrying counts of namespaces, where Store.Stats counts them (it
// does not know hosts), and returns how many each namespace holds so. It
// reads the lagging registrations (Store.List) only when a host is not up,
// at most MaxHeldScan of them; past that truncated is true and the counts
// are those of the registrations it read. Under concurrent change the
// counts are approximate (two reads), never negative. Errors are the
// store's.
func SplitHeld(ctx context.Context, store push.Store, namespaces map[string]push.NamespaceStats, notUp map[string]string) (held map[string]int, truncated bool, err error) {
	held = map[string]int{}
	if len(notUp) == 0 {
		return held, false, nil
	}
	q := push.ListQuery{Lagging: true, Limit: push.MaxListLimit}
	for scanned := 0; ; {
		page, err := store.List(ctx, q)
		if err != nil {
			return nil, false, err
		}
		for _, s := range page {
			c, ok := namespaces[s.Namespace]
			if !ok || notUp[s.Host()] == "" || s.Parked || s.Lag() == 0 {
				continue
			}
			held[s.Namespace]++
			// Stats and List are two reads: a registration that changed
			// between them (an append to an idle one) was not counted
			// where this takes it from. No count goes below zero.
			if s.State() == push.StateRetrying {
				c.Retrying = max(c.Retrying-1, 0)
			} else {
				c.Ready = max(c.Ready-1, 0)
			}
			namespaces[s.Namespace] = c
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

func (p *Page) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	at := p.now()
	st, err := p.store.Stats(ctx, at)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	held, notUp, err := p.held(ctx)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	heldCounts, truncated, err := SplitHeld(ctx, p.store, st.Namespaces, held)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	rows := map[string]*nsRow{}
	for ns, c := range st.Namespaces {
		rows[ns] = &nsRow{Name: ns, Ready: c.Ready, Retrying: c.Retrying, Held: heldCounts[ns], Parked: c.Parked, Idle: c.Idle, Leased: c.Leased, Behind: c.Behind}
	}
	var list []nsRow
	for _, ns := range slices.Sorted(mapKeys(rows)) {
		row := rows[ns]
		rate, lag := p.series(ns)
		row.Rate = chart{Label: "deliveries/s", Points: rate}
		row.Lag = chart{Label: "records behind", Points: lag}
		link := func(state string) string {
			return "registrations?" + url.Values{"namespace": {ns}, "state": {state}}.Encode()
		}
		row.ReadyLink, row.RetryingLink, row.HeldLink = link(push.StateReady), link(push.StateRetrying), link(StateHeld)
		row.ParkedLink, row.IdleLink = link(push.StateParked), link(push.StateIdle)
		row.NamespaceLink = "registrations?" + url.Values{"namespace": {ns}}.Encode()
		list = append(list, *row)
	}
	lagging := make([]regView, len(st.Lagging))
	for i, s := range st.Lagging {
		lagging[i] = held.view(s)
	}
	var oldest *regView
	if st.OldestParked != nil {
		v := held.view(*st.OldestParked)
		oldest = &v
	}
	p.render(w, r, http.StatusOK, "overview", map[string]any{
		"Title": "Overview", "At": at, "Namespaces": list, "Lagging": lagging, "OldestParked": oldest,
		"NotUp": notUp, "HeldTruncated": truncated, "MaxHeldScan": MaxHeldScan,
	})
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// registrationsShown is how many rows one page of the registrations view
// shows; registrationsScan how many it reads at most to find them when a
// state filters.
const (
	registrationsShown = 100
	registrationsScan  = 10_000
)

var states = []string{push.StateReady, push.StateRetrying, StateHeld, push.StateParked, push.StateIdle}

func (p *Page) registrations(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f := r.URL.Query()
	stream, ns, state := f.Get("stream"), f.Get("namespace"), f.Get("state")
	if state != "" && !slices.Contains(states, state) {
		p.fail(w, r, http.StatusBadRequest, fmt.Sprintf("state %q must be one of %s", state, strings.Join(states, ", ")))
		return
	}
	held, _, err := p.held(ctx)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	q := push.ListQuery{Stream: stream, Namespace: ns, Parked: state == push.StateParked,
		Lagging: state == push.StateReady || state == push.StateRetrying || state == StateHeld,
		After:   push.Key{Stream: f.Get("after_stream"), ID: f.Get("after_id")}, Limit: registrationsShown}
	var rows []regView
	var next string
	for scanned := 0; len(rows) < registrationsShown; {
		page, err := p.store.List(ctx, q)
		if err != nil {
			p.failErr(w, r, err)
			return
		}
		for i, s := range page {
			v := held.view(s)
			if state == "" || v.State == state {
				rows = append(rows, v)
			}
			if len(rows) == registrationsShown && i < len(page)-1 {
				page = page[:i+1]
				break
			}
		}
		scanned += len(page)
		if len(page) < q.Limit && len(rows) < registrationsShown {
			break
		}
		q.After = page[len(page)-1].Key()
		if len(rows) == registrationsShown || scanned >= registrationsScan {
			nq := url.Values{"after_stream": {q.After.Stream}, "after_id": {q.After.ID}}
			for k, v := range map[string]string{"stream": stream, "namespace": ns, "state": state} {
				if v != "" {
					nq.Set(k, v)
				}
			}
			next = "registrations?" + nq.Encode()
			break
		}
	}
	p.render(w, r, http.StatusOK, "registrations", map[string]any{
		"Title": "Registrations", "Rows": rows, "Next": next, "Stream": stream, "Namespace": ns, "State": state, "States": states,
	})
}

// done is what the registration view says after an action: fixed text, so
// nothing in the address is echoed.
var done = map[string]string{
	"unpark":     "Unparked: due now at its cursor, with its attempts reset.",
	"skip":       "Skipped: the cursor moved forward; evidence written.",
	"rewind":     "Rewound: the cursor moved; the next sweeps send those records again.",
	"reset-host": "Host reset: up, and its held registrations released.",
}

func (p *Page) registration(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	stream, id := q.Get("stream"), q.Get("id")
	if stream == "" || id == "" {
		p.fail(w, r, http.StatusBadRequest, "stream and id are required (registration?stream=…&id=…)")
		return
	}
	s, err := p.store.Get(ctx, stream, id)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	evs, err := p.store.Evidence(ctx, stream, id, 0)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	held, _, err := p.held(ctx)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	for i := range evs {
		evs[i].Location = RedactURL(evs[i].Location)
	}
	v := held.view(s)
	acked := uint64(0)
	if s.NextSeq > 0 {
		acked = s.NextSeq - 1
	}
	p.render(w, r, http.StatusOK, "registration", map[string]any{
		"Title": "Registration", "R": v, "Evidence": evs, "Acked": acked, "Done": done[q.Get("done")],
		"NextSeq": s.NextSeq + 1, "HeadNext": s.Head + 1,
	})
}

func (p *Page) hosts(w http.ResponseWriter, r *http.Request) {
	hs, err := push.AllHosts(r.Context(), p.store, push.HostQuery{})
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "hosts", map[string]any{"Title": "Hosts", "Hosts": hs, "Done": done[r.URL.Query().Get("done")]})
}

func (p *Page) record(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	id, stream, seqText := q.Get("id"), q.Get("stream"), q.Get("seq")
	data := map[string]any{"Title": "Record status", "ID": id, "Stream": stream, "Seq": seqText}
	var rec journal.Record
	switch {
	case id == "" && stream == "" && seqText == "":
		p.render(w, r, http.StatusOK, "record", data)
		return
	case id != "" && seqText == "":
		var err error
		if rec, err = p.store.Lookup(ctx, id); err != nil {
			p.failErr(w, r, err)
			return
		}
	case id == "" && stream != "" && seqText != "":
		seq, err := strconv.ParseUint(seqText, 10, 64)
		if err != nil || seq == 0 {
			p.fail(w, r, http.StatusBadRequest, fmt.Sprintf("seq %q is not a seq (1, 2, …)", seqText))
			return
		}
		recs, err := p.store.Read(ctx, stream, seq, 1)
		if err != nil {
			p.failErr(w, r, err)
			return
		}
		if len(recs) == 0 || recs[0].Seq != seq {
			p.failErr(w, r, fmt.Errorf("stream %q has no record #%d (never appended, or pruned once every registration had acknowledged it): %w", stream, seq, journal.ErrNotFound))
			return
		}
		rec = recs[0]
	default:
		p.fail(w, r, http.StatusBadRequest, "name the record by id, or by stream and seq (not both)")
		return
	}
	held, _, err := p.held(ctx)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	var acked, pending []regView
	lq := push.ListQuery{Stream: rec.Stream, Limit: push.MaxListLimit}
	for {
		page, err := p.store.List(ctx, lq)
		if err != nil {
			p.failErr(w, r, err)
			return
		}
		for _, s := range page {
			if s.NextSeq > rec.Seq {
				acked = append(acked, held.view(s))
			} else {
				pending = append(pending, held.view(s))
			}
		}
		if len(page) < lq.Limit {
			break
		}
		lq.After = page[len(page)-1].Key()
	}
	data["Record"], data["Acked"], data["Pending"] = rec, acked, pending
	p.render(w, r, http.StatusOK, "record", data)
}

// act is one operator action, as the confirmation step and the POST read it.
type act struct {
	Action, Stream, ID, Host, Reason string
	ToSeq                            uint64
}

// parseAct reads an action from a form or a query. Errors name the field.
func parseAct(v url.Values) (act, error) {
	a := act{Action: v.Get("action"), Stream: v.Get("stream"), ID: v.Get("id"), Host: v.Get("host"), Reason: v.Get("reason")}
	switch a.Action {
	case "unpark", "skip", "rewind":
		if a.Stream == "" || a.ID == "" {
			return a, journal.Invalid("stream", "and id are required for %s", a.Action)
		}
	case "reset-host":
		if err := push.ValidateHost(a.Host); err != nil {
			return a, err
		}
		return a, nil
	default:
		return a, journal.Invalid("action", "%q must be unpark, skip, rewind or reset-host", a.Action)
	}
	if a.Action == "skip" || a.Action == "rewind" {
		s := v.Get("to_seq")
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			return a, journal.Invalid("to_seq", "%q is not a seq (1, 2, …)", s)
		}
		a.ToSeq = n
	}
	if a.Action == "skip" && a.Reason == "" {
		a.Reason = "skipped by an operator (page)"
	}
	return a, nil
}

func (p *Page) confirm(w http.ResponseWriter, r *http.Request) {
	a, err := parseAct(r.URL.Query())
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	data := map[string]any{"Title": "Confirm", "A": a}
	if a.Action != "reset-host" {
		s, err := p.store.Get(r.Context(), a.Stream, a.ID)
		if err != nil {
			p.failErr(w, r, err)
			return
		}
		// Refuse at once what the store would refuse (it stays the judge).
		switch {
		case a.Action == "skip" && (a.ToSeq <= s.NextSeq || a.ToSeq > s.Head+1):
			p.failErr(w, r, journal.Invalid("to_seq", "%d must be from %d (past the cursor) to %d (head+1)", a.ToSeq, s.NextSeq+1, s.Head+1))
			return
		case a.Action == "rewind" && a.ToSeq > s.Head+1:
			p.failErr(w, r, journal.Invalid("to_seq", "%d must be from 1 to %d (head+1)", a.ToSeq, s.Head+1))
			return
		}
		held, _, err := p.held(r.Context())
		if err != nil {
			p.failErr(w, r, err)
			return
		}
		data["R"] = held.view(s)
	}
	p.render(w, r, http.StatusOK, "confirm", data)
}

// action carries out a confirmed action through the store, as herald
// unpark, skip, rewind and hosts reset do: the store writes the evidence.
func (p *Page) action(w http.ResponseWriter, r *http.Request) {
	a, err := parseAct(r.PostForm)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	ctx, at := r.Context(), p.now()
	switch a.Action {
	case "unpark":
		err = p.store.Unpark(ctx, a.Stream, a.ID, at)
	case "skip":
		err = p.store.Skip(ctx, a.Stream, a.ID, a.ToSeq, at, a.Reason)
	case "rewind":
		err = p.store.Rewind(ctx, a.Stream, a.ID, a.ToSeq, at)
	case "reset-host":
		_, err = p.store.ResetHost(ctx, a.Host, at)
	}
	if err != nil {
		if errors.Is(err, journal.ErrInvalid) || errors.Is(err, journal.ErrNotFound) {
			err = fmt.Errorf("%w; nothing was changed", err)
		}
		p.failErr(w, r, err)
		return
	}
	if a.Action == "reset-host" {
		http.Redirect(w, r, p.prefix+"hosts?done=reset-host", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, p.prefix+regLink(a.Stream, a.ID)+"&done="+a.Action, http.StatusSeeOther)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// ago says how long before now t was, roughly ("3m", "2h", "5d"), or "in
// 3m" for a future t.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	prefix, suffix := "", " ago"
	if d < 0 {
		d, prefix, suffix = -d, "in ", ""
	}
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d.Hours()))
	default:
		s = fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	return prefix + s + suffix
}

// pct is a of b in percent, for the cursor bar (0 when b is 0).
func pct(a, b uint64) int {
	if b == 0 {
		return 100
	}
	return int(a * 100 / b)
}
