// Package operator is what herald's operator surfaces (internal/cli, the
// daemon's APIs, daemon/page) share, so that each rule (what "held" means,
// what a URL shows, what an unpark answers) is stated once.
package operator

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/transport"
)

// StateHeld is the state shown for a registration with work on a host that
// is down or unavailable (README, "Hosts"); Store.Stats counts it as ready
// or retrying.
const StateHeld = "held"

// RegistrationView is a registration as shown: everything but the config,
// which holds secrets, the URL redacted (RedactURL); times RFC 3339, UTC,
// absent when zero. daemon/openapi.yaml's RegistrationFields says what each
// field means.
type RegistrationView struct {
	Stream           string     `json:"stream"`
	ID               string     `json:"id"`
	Namespace        string     `json:"namespace"`
	Host             string     `json:"host"`
	URL              string     `json:"url"`
	OnRejected       string     `json:"on_4xx,omitempty"`
	Kinds            []string   `json:"kinds,omitempty"` // absent: every kind
	Window           int        `json:"window"`          // messages unacknowledged at once (1: strict order)
	Retry            *RetryView `json:"retry,omitempty"` // the registration's own; absent: its namespace's
	Rate             string     `json:"rate,omitempty"`
	PacedUntil       time.Time  `json:"paced_until,omitzero"`
	RetainMax        string     `json:"retain_max"` // store.FormatDays
	RetainMaxDefault bool       `json:"retain_max_default,omitempty"`
	Subscription     string     `json:"subscription,omitempty"` // the prefix of the subscription that made it
	NextSeq          uint64     `json:"next_seq"`
	Head             uint64     `json:"head"`
	Lag              uint64     `json:"lag"`
	Attempts         int        `json:"attempts"`
	HostFailures     int        `json:"host_failures,omitempty"` // host-level failures at the cursor, never charged
	FailingSince     time.Time  `json:"failing_since,omitzero"`  // the current run of failures' first (Attempts > 0)
	NextAttemptAt    time.Time  `json:"next_attempt_at,omitzero"`
	State            string     `json:"state"`                       // push's states, or StateHeld
	HeldFor          string     `json:"held_for,omitempty"`          // the host's state when State is held
	HostNextProbeAt  time.Time  `json:"host_next_probe_at,omitzero"` // when State is held: the host's next probe, the first send that may release it
	Parked           bool       `json:"parked"`
	Paused           bool       `json:"paused,omitempty"` // an operator's stop (herald pause); last_error says who and why
	ParkedAt         time.Time  `json:"parked_at,omitzero"`
	LastError        string     `json:"last_error,omitempty"`
	LeaseOwner       string     `json:"lease_owner,omitempty"`
	LeaseUntil       time.Time  `json:"lease_until,omitzero"`
	Sealed           bool       `json:"sealed"`
	ConfigError      string     `json:"config_error,omitempty"` // its stored config does not open (store.Registration.ConfigError)
	Headers          []string   `json:"headers,omitempty"`      // what may be shown of transport.Endpoint
	ClientCert       bool       `json:"client_cert,omitempty"`
	Proxy            string     `json:"proxy,omitempty"`
	SignatureScheme  string     `json:"signature_scheme,omitempty"` // activitypub.ShownScheme
	// Secrets counts a webhook's signing secrets; OldSecretsUntil is when
	// the last secret a rotation retired stops signing (zero: none).
	Secrets         int       `json:"secrets,omitempty"`
	OldSecretsUntil time.Time `json:"old_secrets_until,omitzero"`
}

// retryView returns p as shown, nil for the zero policy (the namespace's).
func retryView(p store.RetryPolicy) *RetryView {
	if p.IsZero() {
		return nil
	}
	v := &RetryView{MaxAttempts: p.MaxAttempts}
	for _, d := range p.Schedule {
		v.Schedule = append(v.Schedule, store.FormatDays(d))
	}
	if p.For > 0 {
		v.For = store.FormatDays(p.For)
	}
	return v
}

// RetryView is a registration's own retry policy (push.RetryPolicy) as
// shown: delays as "5s", "10h", "3d"; an absent part is its namespace's.
type RetryView struct {
	Schedule    []string `json:"schedule,omitempty"`
	MaxAttempts int      `json:"max_attempts,omitempty"`
	For         string   `json:"for,omitempty"`
}

// String is the policy in one line, as register's flags take it.
func (r *RetryView) String() string {
	if r == nil {
		return "the namespace's"
	}
	var parts []string
	if len(r.Schedule) > 0 {
		parts = append(parts, "--retry-schedule "+strings.Join(r.Schedule, ","))
	}
	if r.MaxAttempts > 0 {
		parts = append(parts, fmt.Sprintf("--max-attempts %d", r.MaxAttempts))
	}
	if r.For != "" {
		parts = append(parts, "--retry-for "+r.For)
	}
	return strings.Join(parts, " ")
}

// Held maps each host that is not up (down, unavailable) to its health.
// A nil Held holds nothing.
type Held map[string]store.Host

// HeldHosts reads the hosts that are not up. Errors are the store's.
func HeldHosts(ctx context.Context, hs store.HostStore) (Held, error) {
	held := Held{}
	for _, state := range []string{store.HostDown, store.HostUnavailable} {
		list, err := store.AllHosts(ctx, hs, store.HostQuery{State: state})
		if err != nil {
			return nil, err
		}
		for _, h := range list {
			held[h.Host] = h
		}
	}
	return held, nil
}

// HeldHost reads host alone: Held holding it when it is not up. Errors are
// the store's.
func HeldHost(ctx context.Context, hs store.HostStore, host string) (Held, error) {
	list, err := hs.Hosts(ctx, store.HostQuery{Host: host, Limit: 1})
	if err != nil || len(list) == 0 || list[0].State == store.HostUp {
		return nil, err
	}
	return Held{host: list[0]}, nil
}

// Registration reads stream/id as shown. Errors are the store's:
// journal.ErrNotFound for no such registration.
func Registration(ctx context.Context, s store.Store, stream, id string) (RegistrationView, error) {
	st, err := s.Get(ctx, stream, id)
	if err != nil {
		return RegistrationView{}, err
	}
	held, err := HeldHost(ctx, s, st.Host())
	return held.View(st), err
}

// View returns s as shown, held when it has work on a host of held and is
// not parked.
func (held Held) View(s store.Status) RegistrationView {
	v := RegistrationView{
		Stream: s.Stream, ID: s.ID, Namespace: s.Namespace, Host: s.Host(), URL: RedactURL(s.URL),
		OnRejected: string(s.OnRejected), Kinds: s.Kinds, Window: max(s.Window, 1), Rate: s.Rate.String(), PacedUntil: s.PacedUntil,
		RetainMax: store.FormatDays(s.RetainBound()), RetainMaxDefault: s.RetainMax == 0, Subscription: s.Subscription, NextSeq: s.NextSeq, Head: s.Head,
		Lag: s.Lag(), Attempts: s.Attempts, HostFailures: s.HostFailures, NextAttemptAt: s.NextAttemptAt, State: s.State(),
		Parked: s.Parked, Paused: s.Paused, ParkedAt: s.ParkedAt, LastError: s.LastError, LeaseOwner: s.LeaseOwner, LeaseUntil: s.LeaseUntil, Sealed: s.Sealed,
		ConfigError: s.ConfigError,
	}
	if e, err := transport.EndpointOf(s.Config); err == nil {
		v.Headers, v.ClientCert = e.HeaderNames(), e.ClientCert != ""
		if u, err := url.Parse(e.Proxy); err == nil && e.Proxy != "" {
			v.Proxy = u.Host
		}
	}
	if len(v.Headers) == 0 {
		v.Headers = nil
	}
	if s.Namespace == activitypub.Namespace {
		v.SignatureScheme = activitypub.ShownScheme(s.Config)
	}
	if s.Namespace == webhook.Namespace {
		if c, err := webhook.ParseConfig(s.Config); err == nil {
			v.Secrets = len(c.Secrets)
			for _, r := range c.Retiring {
				if r.Until.After(v.OldSecretsUntil) {
					v.OldSecretsUntil = r.Until.UTC()
				}
			}
		}
	}
	v.Retry = retryView(s.Retry)
	if s.Attempts > 0 {
		v.FailingSince = s.FailingSince
	}
	if h, ok := held[v.Host]; ok && !s.Parked && s.Lag() > 0 {
		v.State, v.HeldFor, v.HostNextProbeAt = StateHeld, h.State, h.NextProbeAt
	}
	return v
}

// Views is View of each of sts.
func (held Held) Views(sts []store.Status) []RegistrationView {
	out := make([]RegistrationView, len(sts))
	for i, s := range sts {
		out[i] = held.View(s)
	}
	return out
}

// RegisteredView answers a registration (POST /v1/registrations, herald
// register --json), with warnings of what will keep it from being delivered
// as asked (the network guard, WindowNote).
type RegisteredView struct {
	RegistrationView
	// Secret is the webhook secret herald made for a registration given
	// none, shown in this answer only.
	Secret   string   `json:"secret,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// WindowNote warns that a window above maxPerHost (whose: "this daemon's",
// "the default") is capped by it; "" otherwise.
func WindowNote(window, maxPerHost int, whose string) string {
	if window <= maxPerHost {
		return ""
	}
	return fmt.Sprintf("window %d is above %s --max-per-host (%d), which caps a worker's messages in flight to one host: "+
		"%d of this registration's are sent at a time unless the workers run with --max-per-host %d", window, whose, maxPerHost, maxPerHost, window)
}

// RedactURL shows a URL without what may be a credential: the query
// becomes "?…", every path segment of 16 bytes or more "…" (the token of
// /api/webhooks/<id>/<token>); receivers can still be told apart.
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

// Instant shows t as tables and the page do, UTC to the second, in a form
// --at reads back (2026-03-15 11:00:00Z); "-" for the zero time.
func Instant(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// HostArg reads a host as an operator names it: the host:port herald hosts
// lists, or any http(s) URL on it, checked as store.ValidateHost does.
// Errors wrap journal.ErrInvalid, field "host".
func HostArg(s string) (string, error) {
	if !strings.Contains(s, "://") {
		return store.FoldHost(s), store.ValidateHost(s)
	}
	if err := store.ValidateURL(s); err != nil {
		return "", journal.Invalid("host", "is neither host:port, as herald hosts lists it, nor a URL herald delivers to (%v)", err)
	}
	return store.HostOf(s), nil
}

// List lists, as shown, up to limit registrations that q matches, in state
// when it is set (push's states or StateHeld). next, when others follow, is
// where to list them from: past the last one listed, or past the last one
// read when scan (0: no bound) were read to find them.
func List(ctx context.Context, s store.Store, q store.ListQuery, state string, limit, scan int) (out []RegistrationView, next *store.Key, err error) {
	if err := CheckList(q); err != nil {
		return nil, nil, err
	}
	held, err := HeldHosts(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	out = []RegistrationView{} // none is an empty list, in JSON too
	q.Parked = q.Parked || state == store.StateParked || state == store.StatePaused
	q.Lagging = q.Lagging || state == store.StateReady || state == store.StateRetrying || state == StateHeld
	for scanned := 0; ; {
		q.Limit = store.MaxListLimit
		if state == "" {
			q.Limit = min(limit+1-len(out), q.Limit) // one more: do others follow?
		}
		page, err := s.List(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		for _, st := range page {
			if v := held.View(st); state == "" || v.State == state {
				if len(out) == limit {
					return out, &store.Key{Stream: out[limit-1].Stream, ID: out[limit-1].ID}, nil
				}
				out = append(out, v)
			}
		}
		if scanned += len(page); len(page) < q.Limit {
			return out, nil, nil
		}
		if q.After = page[len(page)-1].Key(); scan > 0 && scanned >= scan {
			return out, &q.After, nil
		}
	}
}

// SubscriptionView is a subscription as shown (herald subscriptions, GET
// /v1/subscriptions): its template without the config, and how many
// streams it follows; Registrations, when asked for, each stream's.
type SubscriptionView struct {
	Prefix        string             `json:"stream_prefix"`
	ID            string             `json:"id"`
	Namespace     string             `json:"namespace"`
	Host          string             `json:"host"`
	URL           string             `json:"url"`
	OnRejected    string             `json:"on_4xx,omitempty"`
	Kinds         []string           `json:"kinds,omitempty"`
	Window        int                `json:"window"`
	RetainMax     string             `json:"retain_max"`
	Retry         *RetryView         `json:"retry,omitempty"` // its registrations' own; absent: their namespace's
	From          string             `json:"from"`            // where the streams that existed when it was made started: start or head
	Streams       int                `json:"streams"`
	Registrations []RegistrationView `json:"registrations,omitempty"`
	Secret        string             `json:"secret,omitempty"` // a webhook secret made for it, shown once
	// With Registrations, and in Subscribe's answer: the streams under the
	// prefix it does not follow (skipped; at most MaxSkippedShown of them,
	// in order; SkippedStreams counts all).
	Skipped        []string `json:"skipped,omitempty"`
	SkippedStreams int      `json:"skipped_streams,omitempty"`
}

// MaxSkippedShown bounds SubscriptionView.Skipped: a tenant may hold a
// registration of the id on each of many streams.
const MaxSkippedShown = 100

// Subscribed is st, just subscribed through s, as shown, with the streams
// it skipped (skipped). An error (the store's) leaves them out, not the
// rest: the subscription is made, and its secret shown only here.
func Subscribed(ctx context.Context, s store.Store, st store.SubscriptionStatus, secret string) (SubscriptionView, error) {
	v := SubscriptionViewOf(st)
	v.Secret = secret
	var err error
	if v.Skipped, v.SkippedStreams, err = skipped(ctx, s, st.Prefix, st.ID); err != nil {
		return v, fmt.Errorf("subscription %s is made, but the streams it skipped are unknown: %w", store.SubscriptionName(st.Prefix, st.ID), err)
	}
	return v, nil
}

// skipped returns the streams under prefix that subscription id does not
// follow, at most MaxSkippedShown of them in order, and their count: each
// holds a registration of its id that it did not make (made alone before
// it), whose receiver, not the subscription's, gets that stream's records.
// Errors are the store's.
func skipped(ctx context.Context, s store.Store, prefix, id string) (shown []string, n int, err error) {
	q := store.ListQuery{After: store.Key{Stream: prefix}, Limit: store.MaxListLimit}
	for {
		page, err := s.List(ctx, q)
		if err != nil {
			return nil, 0, err
		}
		for _, r := range page {
			if !strings.HasPrefix(r.Stream, prefix) {
				return shown, n, nil
			}
			if r.ID == id && r.Subscription != prefix {
				if n++; len(shown) < MaxSkippedShown {
					shown = append(shown, r.Stream)
				}
			}
		}
		if len(page) < q.Limit {
			return shown, n, nil
		}
		q.After = page[len(page)-1].Key()
	}
}

// SubscriptionViewOf returns st as shown.
func SubscriptionViewOf(st store.SubscriptionStatus) SubscriptionView {
	from := "start"
	if st.FromHead {
		from = "head"
	}
	return SubscriptionView{Prefix: st.Prefix, ID: st.ID, Namespace: st.Namespace, Host: store.HostOf(st.URL), URL: RedactURL(st.URL),
		OnRejected: string(st.OnRejected), Kinds: st.Kinds, Window: max(st.Window, 1),
		RetainMax: store.FormatDays(st.Template(st.Prefix).RetainBound()), Retry: retryView(st.Retry), From: from, Streams: st.Streams}
}

// Subscriptions lists the subscriptions (of prefix, if set), with each
// stream's registration and the streams it skipped if streams. Errors are
// the store's.
func Subscriptions(ctx context.Context, b store.Backend, prefix string, streams bool) ([]SubscriptionView, error) {
	list, err := b.Subscriptions(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var held Held
	if streams {
		if held, err = HeldHosts(ctx, b); err != nil {
			return nil, err
		}
	}
	out := make([]SubscriptionView, len(list))
	for i, st := range list {
		out[i] = SubscriptionViewOf(st)
		if streams {
			regs, err := store.AllRegistrations(ctx, b, store.ListQuery{Subscription: st.Prefix, ID: st.ID})
			if err != nil {
				return nil, err
			}
			out[i].Registrations = held.Views(regs)
			if out[i].Skipped, out[i].SkippedStreams, err = skipped(ctx, b, st.Prefix, st.ID); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
