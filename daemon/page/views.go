package page

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldpush/herald/daemon/internal/web"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// href is view (relative to the prefix) with the query of kv's name and
// value pairs, those with a value.
func href(view string, kv ...string) string {
	q := url.Values{}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return view + "?" + q.Encode()
}

func link(stream, id string) string { return href("registration", "stream", stream, "id", id) }

// nsRow is one namespace on the overview.
type nsRow struct {
	Name string
	operator.NamespaceView
	Rate, Lag chart
}

func (p *Page) overview(w http.ResponseWriter, r *http.Request) {
	at := p.now()
	st, err := operator.StatusAt(r.Context(), p.store, at)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	var rows []nsRow
	for _, ns := range st.Names() {
		rate, lag := p.series(ns)
		rows = append(rows, nsRow{Name: ns, NamespaceView: st.Namespaces[ns],
			Rate: chart{Label: "deliveries/s", Points: rate}, Lag: chart{Label: "records behind", Points: lag}})
	}
	p.render(w, r, http.StatusOK, "overview", map[string]any{
		"Title": "Overview", "At": at, "Namespaces": rows, "Lagging": st.Lagging, "OldestParked": st.OldestParked,
		"Hosts": st.Hosts, "MoreNotUp": st.Hosts.Down + st.Hosts.Unavailable - len(st.Hosts.NotUp), "HeldTruncated": st.HeldTruncated, "MaxHeldScan": operator.MaxHeldScan,
		"UnnumberedStale": st.Unnumbered.Records > 0 && at.Sub(st.Unnumbered.Oldest) >= operator.UnnumberedStale,
		"Unnumbered":      operator.UnnumberedNote(st.Unnumbered, at, "no sequencer numbers them: is herald run's sequencer failing (its log says), or is no daemon running on this database?"),
	})
}

// registrationsShown is how many rows one page of the registrations view
// shows; registrationsScan how many it reads at most to find them when a
// state filters.
const (
	registrationsShown = 100
	registrationsScan  = 10_000
)

var states = []string{store.StateReady, store.StateRetrying, operator.StateHeld, store.StateParked, store.StatePaused, store.StateIdle}

func (p *Page) registrations(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f := r.URL.Query()
	stream, ns, state := f.Get("stream"), f.Get("namespace"), f.Get("state")
	if state != "" && !slices.Contains(states, state) {
		p.fail(w, r, http.StatusBadRequest, fmt.Sprintf("state %q must be one of %s", state, strings.Join(states, ", ")))
		return
	}
	q := store.ListQuery{Stream: stream, Namespace: ns, After: store.Key{Stream: f.Get("after_stream"), ID: f.Get("after_id")}}
	rows, after, err := operator.List(ctx, p.scoped(r), q, state, registrationsShown, registrationsScan)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	var next string
	if after != nil {
		next = href("registrations", "after_stream", after.Stream, "after_id", after.ID, "stream", stream, "namespace", ns, "state", state)
	}
	subs, err := operator.Subscriptions(ctx, p.scoped(r), "", false)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "registrations", map[string]any{
		"Title": "Registrations", "Rows": rows, "Next": next, "Stream": stream, "Namespace": ns, "State": state, "States": states,
		"Subscriptions": subs,
	})
}

// done is what the registration view says after an action: fixed text, so
// nothing in the address is echoed.
var done = map[string]string{
	"unpark":        "Unparked: due now at its cursor, with its attempts reset.",
	"pause":         "Paused: never claimed until resumed; evidence and an event written.",
	"resume":        "Resumed: due now at its cursor, with its attempts reset.",
	"resend":        "Resend queued: the next sweep of its namespace sends the record once; its answer will be a resent row of the evidence.",
	"resend-queued": "That resend was queued already: it stays and goes out once; nothing changed.",
	"skip":          "Skipped: the cursor moved forward; evidence written.",
	"rewind":        "Rewound: the cursor moved; the next sweeps send those records again.",
	"reset-host":    "Host reset: up, and its held registrations released.",
	"revoke-token":  "Token revoked: its requests and page sessions are refused from now on.",
	"add-key":       "Key added: registrations naming its key id sign with it.",
	"rotate-key":    "Key rotated: each registration naming it signs with the new key from its next attempt.",
	"remove-key":    "Key removed: registrations that still name it fail their deliveries, retried, until it is added again.",
	"set-rate":      "Rate set: it applies from the registration's next burst.",
}

func (p *Page) registration(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	stream, id := q.Get("stream"), q.Get("id")
	if stream == "" || id == "" {
		p.fail(w, r, http.StatusBadRequest, "stream and id are required (registration?stream=…&id=…)")
		return
	}
	v, err := operator.Registration(ctx, p.scoped(r), stream, id)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	evs, err := operator.Evidence(ctx, p.scoped(r), stream, id, 0)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	said := done[q.Get("done")]
	if verb := map[string]string{"unpark": "Unparked", "resume": "Resumed"}[q.Get("done")]; verb != "" && v.State == operator.StateHeld {
		said = fmt.Sprintf("%s: held for host %s (%s) until its next probe at %s, then due at its cursor, with its attempts reset.",
			verb, v.Host, v.HeldFor, operator.Instant(v.HostNextProbeAt))
	}
	p.render(w, r, http.StatusOK, "registration", map[string]any{
		"Title": "Registration", "R": v, "Evidence": evs, "Acked": max(v.NextSeq, 1) - 1, "Done": said,
		"NextSeq": v.NextSeq + 1, "HeadNext": v.Head + 1,
		"Refused":        operator.MayChange(operator.TokenOf(ctx), store.Key{Stream: v.Stream, ID: v.ID}, v.Subscription), // no action offered
		"OldSecretsSign": v.OldSecretsUntil.After(p.now()),                                                                 // the view keeps an until gone by
		"ExpireOld":      store.FormatDays(operator.DefaultExpireOld),                                                      // rotate-secret's default, as herald rotate-secret's
	})
}

func (p *Page) hosts(w http.ResponseWriter, r *http.Request) {
	hs, err := store.AllHosts(r.Context(), p.store, store.HostQuery{})
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "hosts", map[string]any{"Title": "Hosts", "Hosts": hs, "Done": done[r.URL.Query().Get("done")]})
}

func (p *Page) record(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id, stream, seq := q.Get("id"), q.Get("stream"), q.Get("seq")
	data := map[string]any{"Title": "Record status", "ID": id, "Stream": stream, "Seq": seq}
	if id != "" || stream != "" || seq != "" { // else the form alone
		st, err := operator.RecordStatusOf(r.Context(), p.scoped(r), id, stream, seq)
		if err != nil {
			p.failErr(w, r, err)
			return
		}
		data["Record"], data["Acked"], data["Pending"], data["Unnumbered"] = st.Record, st.Acknowledged, st.NotAcknowledged, st.Unnumbered
	}
	p.render(w, r, http.StatusOK, "record", data)
}

// act is one operator action, as the confirmation step and the POST read it.
type act struct {
	Action, Stream, ID, Host, Reason, By string
	ToSeq                                uint64
	Seq                                  uint64        // of resend
	ExpireOld                            time.Duration // of rotate-secret
	Rate                                 store.Rate    // of set-rate: zero for no limit
}

// parseAct reads an action from a form or a query, by defaulting to who
// acts. Errors name the field.
func parseAct(v url.Values, by string) (act, error) {
	a := act{Action: v.Get("action"), Stream: v.Get("stream"), ID: v.Get("id"), Host: v.Get("host"), Reason: v.Get("reason"), By: v.Get("by")}
	switch a.Action {
	case "pause", "resume", "resend":
		a.By = cmp.Or(a.By, by)
		if err := store.ValidatePause(a.By, a.Reason); err != nil {
			return a, err
		}
		fallthrough
	case "unpark", "skip", "rewind", "rotate-secret", "set-rate":
		if a.Stream == "" || a.ID == "" {
			return a, journal.Invalid("stream", "and id are required for %s", a.Action)
		}
	case "reset-host":
		var err error
		a.Host, err = operator.HostArg(a.Host)
		return a, err
	case "revoke-token":
		if a.ID == "" {
			return a, journal.Invalid("id", "is required for revoke-token")
		}
		return a, nil
	default:
		return a, journal.Invalid("action", "%q must be unpark, pause, resume, resend, skip, rewind, rotate-secret, set-rate, reset-host or revoke-token", a.Action)
	}
	if rate := strings.TrimSpace(v.Get("rate")); a.Action == "set-rate" && rate != "" {
		var err error
		if a.Rate, err = store.ParseRate("rate", rate); err != nil {
			return a, err
		}
	}
	if a.Action == "rotate-secret" {
		var err error
		if a.ExpireOld, err = operator.ParseExpireOld("expire_old", strings.TrimSpace(v.Get("expire_old"))); err != nil {
			return a, err
		}
	}
	if a.Action == "skip" || a.Action == "rewind" {
		s := v.Get("to_seq")
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			return a, journal.Invalid("to_seq", "%q is not a seq (1, 2, …)", s)
		}
		a.ToSeq = n
	}
	if a.Action == "resend" {
		s := v.Get("seq")
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			return a, journal.Invalid("seq", "%q is not a seq (1, 2, …)", s)
		}
		a.Seq = n
	}
	if a.Action == "skip" && a.Reason == "" {
		a.Reason = "skipped by an operator (page)"
	}
	return a, nil
}

// allowedAct is parseAct of v, refused (operator.ErrForbidden) when the
// request's token may not do it.
func allowedAct(r *http.Request, v url.Values) (act, error) {
	a, err := parseAct(v, operator.ActedBy(operator.TokenOf(r.Context()), "page"))
	if err != nil {
		return a, err
	}
	need := map[string]string{"reset-host": needResetHost, "revoke-token": needTokens}[a.Action]
	if need == "" {
		need = needActions
	}
	return a, operator.Allowed(operator.TokenOf(r.Context()), need)
}

func (p *Page) confirm(w http.ResponseWriter, r *http.Request) {
	a, err := allowedAct(r, r.URL.Query())
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	data := map[string]any{"Title": "Confirm", "A": a}
	if a.Stream != "" {
		v, err := operator.Registration(r.Context(), p.scoped(r), a.Stream, a.ID)
		// Refuse at once what the store will refuse, by its rules.
		check := map[string]func(next, head, toSeq uint64) error{"skip": store.ValidateSkip, "rewind": store.ValidateRewind}[a.Action]
		if err == nil {
			err = operator.MayChange(operator.TokenOf(r.Context()), store.Key{Stream: v.Stream, ID: v.ID}, v.Subscription)
		}
		if err == nil && check != nil {
			err = check(v.NextSeq, v.Head, a.ToSeq)
		}
		if err == nil && a.Action == "resend" {
			err = store.CheckResend(a.Stream, a.Seq, v.NextSeq, 1, nil, "") // the low-water mark and the kind are the store's to check
		}
		var held operator.Held
		if err == nil {
			held, err = operator.HeldHost(r.Context(), p.scoped(r), v.Host)
		}
		if err != nil {
			p.failErr(w, r, err)
			return
		}
		data["R"] = v
		if h, ok := held[v.Host]; ok {
			data["HeldBy"] = h // an unpark or resume waits for its probe
		}
	}
	p.render(w, r, http.StatusOK, "confirm", data)
}

// action carries out a confirmed action through the store, as herald
// unpark, skip, rewind and hosts reset do: the store writes the evidence.
func (p *Page) action(w http.ResponseWriter, r *http.Request) {
	a, err := allowedAct(r, r.PostForm)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	ctx, at := r.Context(), p.now()
	switch a.Action {
	case "unpark":
		err = p.scoped(r).Unpark(ctx, a.Stream, a.ID, at)
	case "pause":
		err = p.scoped(r).Pause(ctx, a.Stream, a.ID, at, a.By, a.Reason)
	case "resume":
		err = p.scoped(r).Resume(ctx, a.Stream, a.ID, at, a.By)
	case "resend":
		var queued bool
		if queued, err = p.scoped(r).Resend(ctx, a.Stream, a.ID, a.Seq, at, a.By); !queued {
			a.Action = "resend-queued" // what the answer says: queued already
		}
	case "skip":
		err = p.scoped(r).Skip(ctx, a.Stream, a.ID, a.ToSeq, at, a.Reason)
	case "rewind":
		err = p.scoped(r).Rewind(ctx, a.Stream, a.ID, a.ToSeq, at)
	case "reset-host":
		_, err = p.store.ResetHost(ctx, a.Host, at)
	case "rotate-secret":
		var v operator.RotatedView
		if v, err = operator.RotateSecret(ctx, p.scoped(r), a.Stream, a.ID, at, a.ExpireOld); err == nil {
			// The secret is shown in this answer only (never cached: ServeHTTP): no redirect carries it.
			p.render(w, r, http.StatusOK, "rotated", map[string]any{"Title": "Secret rotated", "R": v.RegistrationView, "V": v})
			return
		}
	case "set-rate":
		_, err = operator.SetRate(ctx, p.scoped(r), a.Stream, a.ID, a.Rate)
	case "revoke-token":
		_, err = p.store.RevokeToken(ctx, a.ID, at)
	}
	if err != nil {
		if errors.Is(err, journal.ErrInvalid) || errors.Is(err, journal.ErrNotFound) {
			err = fmt.Errorf("%w; nothing was changed", err)
		}
		p.failErr(w, r, err)
		return
	}
	switch a.Action {
	case "reset-host":
		http.Redirect(w, r, Prefix+"hosts?done=reset-host", http.StatusSeeOther)
		return
	case "revoke-token":
		http.Redirect(w, r, Prefix+"tokens?done=revoke-token", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+link(a.Stream, a.ID)+"&done="+a.Action, http.StatusSeeOther)
}

// keys lists the actors' keys held once, never a private key, with an
// admin's forms that add, rotate and remove them (herald keys likewise).
func (p *Page) keys(w http.ResponseWriter, r *http.Request) {
	p.renderKeys(w, r, http.StatusOK, map[string]any{"Done": done[r.URL.Query().Get("done")]})
}

// renderKeys renders the keys view with data. No answer of it holds a
// private key (nor is any cached: ServeHTTP): a form's PEM is never
// written back, not even beside its error.
func (p *Page) renderKeys(w http.ResponseWriter, r *http.Request, code int, data map[string]any) {
	views, err := operator.Keys(r.Context(), p.store)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	data["Title"], data["Keys"] = "Keys", views
	data["Admin"] = operator.Allowed(operator.TokenOf(r.Context()), needEditKeys) == nil
	if _, ok := data["KeyID"]; !ok {
		data["KeyID"] = ""
	}
	p.render(w, r, code, "keys", data)
}

// keyDone answers a key's form: err, when a visitor's, beside the keys
// (the key id typed kept for the add form), else a redirect saying what
// was done.
func (p *Page) keyDone(w http.ResponseWriter, r *http.Request, what string, err error) {
	switch {
	case err != nil && web.HTTPStatus(err) < http.StatusInternalServerError:
		data := map[string]any{"Error": fmt.Sprintf("%v; nothing was changed", err)}
		if what == "add-key" {
			data["KeyID"] = r.PostForm.Get("key_id")
		}
		p.renderKeys(w, r, web.HTTPStatus(err), data)
	case err != nil:
		p.failErr(w, r, err)
	default:
		http.Redirect(w, r, Prefix+"keys?done="+what, http.StatusSeeOther)
	}
}

// putKey holds the form's key (key_id, private_key: PEM) by put, as herald
// keys add (operator.AddKey) or rotate (RotateKey) does; what names the action.
func (p *Page) putKey(what string, put func(context.Context, operator.KeyStore, string, string, string, []byte, time.Time) (operator.KeyView, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, err := put(r.Context(), p.store, "key_id", "private_key", r.PostForm.Get("key_id"), []byte(r.PostForm.Get("private_key")), p.now())
		p.keyDone(w, r, what, err)
	}
}

// removeKey removes key_id as herald keys remove does: refused while
// registrations sign with it, unless force is checked.
func (p *Page) removeKey(w http.ResponseWriter, r *http.Request) {
	force := false
	var err error
	if f := r.PostForm.Get("force"); f != "" {
		if force, err = strconv.ParseBool(f); err != nil {
			p.keyDone(w, r, "remove-key", journal.Invalid("force", "%q is not true or false", f))
			return
		}
	}
	_, err = operator.RemoveKey(r.Context(), p.store, r.PostForm.Get("key_id"), force)
	if inUse, ok := errors.AsType[*operator.KeyInUseError](err); ok {
		inUse.Force = `"even while registrations sign with it" checked`
	}
	p.keyDone(w, r, "remove-key", err)
}

// tokens lists the tokens, with the form that makes one.
func (p *Page) tokens(w http.ResponseWriter, r *http.Request) {
	p.renderTokens(w, r, http.StatusOK, map[string]any{"Done": done[r.URL.Query().Get("done")]})
}

func (p *Page) renderTokens(w http.ResponseWriter, r *http.Request, code int, data map[string]any) {
	views, err := operator.Tokens(r.Context(), p.store)
	if err != nil {
		p.failErr(w, r, err)
		return
	}
	data["Title"], data["Tokens"], data["Roles"] = "Tokens", views, store.Roles
	for k, v := range map[string]string{"Name": "", "Role": string(store.RoleReader), "Scope": ""} {
		if _, ok := data[k]; !ok {
			data[k] = v
		}
	}
	p.render(w, r, code, "tokens", data)
}

// createToken makes a token from the form (name, role, scope: one prefix
// a line) and shows its secret, this once, in the answer (never in an
// address).
func (p *Page) createToken(w http.ResponseWriter, r *http.Request) {
	var scope []string
	for _, line := range strings.Split(r.PostForm.Get("scope"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			scope = append(scope, line)
		}
	}
	ct, err := operator.CreateToken(r.Context(), p.store, r.PostForm.Get("name"), r.PostForm.Get("role"), scope, p.now())
	if err != nil && web.HTTPStatus(err) == http.StatusBadRequest {
		p.renderTokens(w, r, http.StatusBadRequest, map[string]any{"Error": err.Error(),
			"Name": r.PostForm.Get("name"), "Role": r.PostForm.Get("role"), "Scope": r.PostForm.Get("scope")})
		return
	} else if err != nil {
		p.failErr(w, r, err)
		return
	}
	p.renderTokens(w, r, http.StatusCreated, map[string]any{"Created": ct})
}

// ago says how long before now t was, roughly ("3m", "2h", "5d"), or "in
// 3m" for a future t.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d, format := now.Sub(t), "%d%s ago"
	if d < 0 {
		d, format = -d, "in %d%s"
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf(format, int(d.Seconds()), "s")
	case d < time.Hour:
		return fmt.Sprintf(format, int(d.Minutes()), "m")
	case d < 48*time.Hour:
		return fmt.Sprintf(format, int(d.Hours()), "h")
	}
	return fmt.Sprintf(format, int(d.Hours()/24), "d")
}

// pct is a of b in percent, for the cursor bar (100 when b is 0).
func pct(a, b uint64) int {
	if b == 0 {
		return 100
	}
	return int(a * 100 / b)
}

// maxSamples is an hour of one-minute samples (RunSampler), and one more
// for the first rate.
const maxSamples = 61

const chartSpan = time.Hour

type sample struct {
	at        time.Time
	delivered map[string]uint64 // per namespace, since the page started
	behind    map[string]uint64 // per namespace, records behind the cursors
}

// Hooks returns next with its Turn hook also counting namespace ns's
// deliveries for the deliveries/s chart. Pass it to the namespace's worker
// (push.WithHooks).
func (p *Page) Hooks(ns string, next push.Hooks) push.Hooks {
	turn := next.Turn
	next.Turn = func(at time.Time, r push.SweepReport, took time.Duration, err error) {
		if r.Deliveries > 0 {
			p.mu.Lock()
			p.delivered[ns] += uint64(r.Deliveries)
			p.mu.Unlock()
		}
		if turn != nil {
			turn(at, r, took, err)
		}
	}
	return next
}

// Sample takes one sample at instant at: the deliveries counted by Hooks so
// far and each namespace's records behind (Store.Stats at at). Errors: the
// store's (no sample is kept).
func (p *Page) Sample(ctx context.Context, at time.Time) error {
	st, err := p.store.Stats(ctx, at)
	if err != nil {
		return err
	}
	s := sample{at: at, behind: map[string]uint64{}}
	for ns, c := range st.Namespaces {
		s.behind[ns] = c.Behind
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s.delivered = maps.Clone(p.delivered)
	p.samples = append(p.samples, s)[max(len(p.samples)+1-maxSamples, 0):]
	return nil
}

// RunSampler calls Sample at once and then every minute on the page's
// clock, until ctx ends: an hour's chart has 60 points, for one Stats a
// minute. A failed sample is logged and skipped.
func (p *Page) RunSampler(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		if err := p.Sample(ctx, p.now()); err != nil && ctx.Err() == nil {
			p.log.Warn("herald page: sample", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type point struct {
	at time.Time
	v  float64
}

// series returns namespace ns's deliveries/s (between successive samples)
// and records behind, over the samples held.
func (p *Page) series(ns string) (rate, lag []point) {
	p.mu.Lock()
	ss := slices.Clone(p.samples)
	p.mu.Unlock()
	for i, s := range ss {
		lag = append(lag, point{s.at, float64(s.behind[ns])})
		if i == 0 {
			continue
		}
		prev := ss[i-1]
		if d := s.at.Sub(prev.at).Seconds(); d > 0 && s.delivered[ns] >= prev.delivered[ns] {
			rate = append(rate, point{s.at, float64(s.delivered[ns]-prev.delivered[ns]) / d})
		}
	}
	return rate, lag
}

type chart struct {
	Label  string // fixed text, never a stored value
	Points []point
}

// chartSVG draws c as an inline SVG line over the hour before its newest
// point. Only numbers and the fixed label go into it.
func chartSVG(c chart) template.HTML {
	const w, h, pad = 260.0, 64.0, 4.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s">`,
		w, h+16, w, h+16, template.HTMLEscapeString(c.Label))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#f6f8fa" stroke="#d0d7de"/>`, w, h)
	if len(c.Points) == 0 {
		// Two lines: SVG text does not wrap, and one line ran past the box.
		fmt.Fprintf(&b, `<text x="8" y="%.0f" font-size="11" fill="#57606a"><tspan x="8">no samples yet: one is taken</tspan><tspan x="8" dy="14">each minute since the daemon started</tspan></text>`, h/2-3)
		fmt.Fprintf(&b, `<text x="0" y="%.0f" font-size="11" fill="#24292f">%s</text></svg>`, h+13, template.HTMLEscapeString(c.Label))
		return template.HTML(b.String())
	}
	end := c.Points[len(c.Points)-1].at
	start := end.Add(-chartSpan)
	top := 0.0
	for _, pt := range c.Points {
		top = max(top, pt.v)
	}
	if top == 0 {
		top = 1
	}
	var pts []string
	for _, pt := range c.Points {
		if pt.at.Before(start) {
			continue
		}
		x := pad + (w-2*pad)*pt.at.Sub(start).Seconds()/chartSpan.Seconds()
		y := h - pad - (h-pad-16)*pt.v/top // 16 px at the top for the max label
		pts = append(pts, strconv.FormatFloat(x, 'f', 1, 64)+","+strconv.FormatFloat(y, 'f', 1, 64))
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#0969da" stroke-width="1.5"/>`, strings.Join(pts, " "))
	last := c.Points[len(c.Points)-1].v
	fmt.Fprintf(&b, `<text x="%.0f" y="12" font-size="10" fill="#57606a" text-anchor="end">max %s</text>`, w-4, num(top))
	fmt.Fprintf(&b, `<text x="0" y="%.0f" font-size="11" fill="#24292f">%s: %s at the last sample</text></svg>`, h+13,
		template.HTMLEscapeString(c.Label), num(last))
	return template.HTML(b.String())
}

func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
