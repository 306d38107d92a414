package daemon

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heraldpush/herald/daemon/internal/web"
	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// APIHandler serves the HTTP API (package doc). Without Options.APIToken it
// answers only a loopback name: mounted under another, give it a token.
func (d *Daemon) APIHandler() http.Handler {
	mux := http.NewServeMux()
	for pattern, h := range d.apiRoutes() {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
			h.ServeHTTP(w, r)
		})
	}
	return guard(mux, d.gate(d.opts.APIToken == "", operator.Static{Secret: d.opts.APIToken, Role: store.RoleOperator, Name: "HERALD_API_TOKEN"},
		operator.Static{Secret: d.opts.AdminToken, Role: store.RoleAdmin, Name: "HERALD_ADMIN_TOKEN"}), "herald api", "HERALD_API_TOKEN")
}

// apiRoutes are the HTTP API's routes, by "METHOD /path"; the OpenAPI test
// checks the document against them.
func (d *Daemon) apiRoutes() map[string]endpoint {
	routes := bothRoutes(d.store, d.opts.Now, d.wake)
	maps.Copy(routes, map[string]endpoint{
		"GET /v1/openapi.json":   func(*http.Request) (any, error) { return json.RawMessage(openAPIJSON), nil },
		"POST /v1/records":       endpoint(d.postRecords),
		"GET /v1/records/status": endpoint(d.recordStatus),
		"GET /v1/status":         endpoint(d.status),
		"POST /v1/registrations": endpoint(d.postRegistration),
		"GET /v1/registration": keyed(nil, nil, func(r *http.Request, k store.Key, _ url.Values) (any, error) {
			return operator.Registration(r.Context(), scope(r, d.store), k.Stream, k.ID)
		}),
		"DELETE /v1/registration": keyed(nil, nil, func(r *http.Request, k store.Key, _ url.Values) (any, error) {
			return withStatus{code: http.StatusNoContent}, scope(r, d.store).Unregister(r.Context(), k.Stream, k.ID)
		}),
		"POST /v1/subscriptions": endpoint(d.postSubscription),
		"GET /v1/subscriptions": endpoint(func(r *http.Request) (any, error) {
			q, err := strictQuery(r, "every subscription is listed; ?stream_prefix=… only one prefix's", "stream_prefix", "streams")
			if err != nil {
				return nil, err
			}
			streams, err := boolParam(q, "streams")
			if err != nil {
				return nil, err
			}
			return operator.Subscriptions(r.Context(), scope(r, d.store), q.Get("stream_prefix"), streams)
		}),
		"DELETE /v1/subscription": endpoint(func(r *http.Request) (any, error) {
			q, err := strictQuery(r, "a subscription is named by ?stream_prefix=…&id=…", "stream_prefix", "id")
			if err != nil {
				return nil, err
			}
			if q.Get("stream_prefix") == "" || q.Get("id") == "" {
				return nil, journal.Invalid("query", "stream_prefix and id are required query parameters (%s?stream_prefix=…&id=…)", r.URL.Path)
			}
			n, err := scope(r, d.store).Unsubscribe(r.Context(), q.Get("stream_prefix"), q.Get("id"))
			if err != nil {
				return nil, err
			}
			return map[string]int{"registrations_removed": n}, nil
		}),
		"POST /v1/registration/rotate-secret": keyed(nil, []string{"expire_old"}, d.rotateSecret),
	})
	return routes
}

// bothRoutes are the routes the admin API and the HTTP API both serve: the
// registrations' list, unpark, pause, resume and resend, tokens and keys;
// now is the clock of operator actions, woke told the namespace of each
// registration made due.
func bothRoutes(db store.Backend, now func() time.Time, woke func(namespace string)) map[string]endpoint {
	routes := map[string]endpoint{
		"GET /v1/registrations":         listRegistrations(db),
		"POST /v1/registration/unpark":  unparkOne(db, now, woke),
		"POST /v1/registrations/unpark": unparkAll(db, now, woke),
		"POST /v1/registration/pause":   pauseOne(db, false, now, woke),
		"POST /v1/registration/resume":  pauseOne(db, true, now, woke),
		"POST /v1/registration/resend":  resendOne(db, now, woke),
	}
	maps.Copy(routes, tokenRoutes(db, now))
	maps.Copy(routes, keyRoutes(db, now))
	return routes
}

func (d *Daemon) rotateSecret(r *http.Request, k store.Key, q url.Values) (any, error) {
	expireOld, err := operator.ParseExpireOld("expire_old", q.Get("expire_old"))
	if err != nil {
		return nil, err
	}
	// The store, not a worker, checks: the config Rotate returns is valid,
	// and a client certificate that has since expired must not block a
	// rotation.
	return operator.RotateSecret(r.Context(), scope(r, d.store), k.Stream, k.ID, d.opts.Now(), expireOld)
}

// appendRequest is the body of POST /v1/records.
type appendRequest struct {
	Stream  string            `json:"stream"`
	Records []json.RawMessage `json:"records"`
}

// appendResponse answers POST /v1/records.
type appendResponse struct {
	Stream  string                `json:"stream"`
	Records []operator.RecordView `json:"records"`
}

func (d *Daemon) postRecords(r *http.Request) (any, error) {
	var req appendRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Records == nil {
		return nil, journal.Invalid("records", "is missing: give an array of records")
	}
	tp, ts, err := headerTrace(r.Header)
	if err != nil {
		return nil, err
	}
	entries := make([]journal.Entry, len(req.Records))
	for i, raw := range req.Records {
		e, err := entryOf(raw, fmt.Sprintf("records[%d]", i))
		if err != nil {
			return nil, err
		}
		if e.Traceparent == "" && e.Tracestate == "" {
			e.Traceparent, e.Tracestate = tp, ts
		}
		entries[i] = e
	}
	if _, err := journal.ValidateEntries(req.Stream, entries, 0); err != nil {
		return nil, apiFields(err)
	}
	// Whether anything is new decides 201 or 200. A lookup before the
	// append answers it: a racing identical request may make both 201, and
	// either way nothing is written twice (the append is idempotent).
	s := scope(r, d.store)
	created := false
	for _, e := range entries {
		_, err := s.Lookup(r.Context(), e.ID)
		if _, waiting := errors.AsType[*journal.UnnumberedError](err); waiting {
			continue // stored, waiting to be numbered: not new
		}
		if errors.Is(err, journal.ErrNotFound) {
			created = true
			break
		} else if err != nil {
			return nil, err
		}
	}
	recs, err := s.Append(r.Context(), req.Stream, entries...)
	if err != nil {
		return nil, apiFields(err)
	}
	out := appendResponse{req.Stream, make([]operator.RecordView, len(recs))}
	for i, rec := range recs {
		out.Records[i] = operator.ViewRecord(rec)
	}
	if !created {
		return out, nil
	}
	d.wakeAll()
	return withStatus{http.StatusCreated, out}, nil
}

// entryOf decodes one record of a POST /v1/records body; field names the
// record ("records[2]") in errors.
func entryOf(raw json.RawMessage, field string) (journal.Entry, error) {
	var rr operator.RecordInput
	if err := operator.DecodeJSON(bytes.NewReader(raw), &rr); err != nil {
		return journal.Entry{}, operator.JSONError(field, err)
	}
	return rr.Entry(field)
}

// headerTrace reads the W3C trace context of a POST /v1/records request
// (Trace Context §3): one traceparent header, and the tracestate headers
// joined with commas (§3.3.1.1), checked as a record's are.
func headerTrace(h http.Header) (tp, ts string, err error) {
	tps := h.Values("Traceparent")
	if len(tps) > 1 {
		return "", "", journal.Invalid("traceparent header", "is given %d times: give it once", len(tps))
	}
	if len(tps) == 1 {
		if tp = strings.TrimSpace(tps[0]); tp == "" {
			return "", "", journal.Invalid("traceparent header", "is empty: give 00-<trace id>-<parent id>-<flags> or leave it out")
		}
	}
	ts = strings.Join(h.Values("Tracestate"), ",")
	return tp, ts, cmp.Or(journal.ValidateTraceparent("traceparent header", tp), journal.ValidateTracestate("tracestate header", ts, tp))
}

// apiFields renames the libraries' fields to the API's: the journal's
// "entries[i]" are "records[i]", and a registration's as operator.Field says;
// the reason as it is (journal.Invalid would cut a value it cut already).
func apiFields(err error) error {
	var ie *journal.InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	if i, field, ok := ie.InBatch(); ok {
		return &journal.InvalidError{Field: fmt.Sprintf("records[%d].%s", i, field), Reason: ie.Reason}
	}
	if field := cmp.Or(map[string]string{"entries": "records"}[ie.Field], operator.Field(ie.Field)); field != ie.Field {
		return &journal.InvalidError{Field: field, Reason: ie.Reason}
	}
	return err
}

// endpointRequest is what the bodies of POST /v1/registrations and POST
// /v1/subscriptions share: the destination and its policy. Config, the
// namespace's config object, is stored and never shown again.
type endpointRequest struct {
	Namespace     string          `json:"namespace"`
	URL           string          `json:"url"`
	OnRejected    string          `json:"on_4xx"`
	Kinds         []string        `json:"kinds"`
	Window        *int            `json:"window"`
	RetrySchedule []string        `json:"retry_schedule"`
	MaxAttempts   *int            `json:"max_attempts"`
	RetryFor      string          `json:"retry_for"`
	RetainMax     string          `json:"retain_max"`
	Config        json.RawMessage `json:"config"`
}

// template reads e into a registration of stream and id, on the worker of
// its namespace. Errors name the field; Registration.Validate's are left to
// the caller's store.
func (d *Daemon) template(e endpointRequest, stream, id string) (push.Registration, *push.Worker, error) {
	wk := d.byNS[e.Namespace]
	if wk == nil {
		return push.Registration{}, nil, journal.Invalid("namespace", "%q is not served by this daemon (it serves %s)", e.Namespace, strings.Join(d.served, ", "))
	}
	if string(e.Config) == "null" { // absent, as every other key's null is
		e.Config = nil
	}
	reg := push.Registration{Stream: stream, ID: id, Namespace: e.Namespace, URL: e.URL, Kinds: e.Kinds, NextSeq: 1,
		OnRejected: push.RejectPolicy(cmp.Or(e.OnRejected, string(push.RejectRetry))), Config: push.Config(e.Config)}
	if e.Window != nil {
		if *e.Window == 0 { // the library reads 0 as 1; a client that sends 0 means something else
			return reg, nil, journal.Invalid("window", "is 0: it must be 1 to %d", store.MaxWindow)
		}
		reg.Window = *e.Window
	}
	var err error
	if e.RetainMax != "" {
		if reg.RetainMax, err = store.ParseDays("retain_max", e.RetainMax, store.MinRetainMax, store.MaxRetainMax); err != nil {
			return reg, nil, err
		}
	}
	for i, s := range e.RetrySchedule {
		d, err := store.ParseDays(fmt.Sprintf("retry_schedule[%d]", i), s, store.MinRetryDelay, store.MaxRetryDelay)
		if err != nil {
			return reg, nil, err
		}
		reg.Retry.Schedule = append(reg.Retry.Schedule, d)
	}
	if e.RetryFor != "" {
		if reg.Retry.For, err = store.ParseDays("retry_for", e.RetryFor, store.MinRetryFor, store.MaxRetryFor); err != nil {
			return reg, nil, err
		}
	}
	if e.MaxAttempts != nil {
		if *e.MaxAttempts == 0 { // the library reads 0 as the default; a client that sends 0 means something else
			return reg, nil, journal.Invalid("max_attempts", "is 0: it must be 1 to %d", store.MaxAttemptsLimit)
		}
		reg.Retry.MaxAttempts = *e.MaxAttempts
	}
	return reg, wk, nil
}

// registrationRequest is the body of POST /v1/registrations. Rate is a
// registration's alone: a subscription's registrations follow a stream each.
type registrationRequest struct {
	Stream  string  `json:"stream"`
	ID      string  `json:"id"`
	FromSeq *uint64 `json:"from_seq"`
	Rate    *string `json:"rate"`
	endpointRequest
}

func (d *Daemon) postRegistration(r *http.Request) (any, error) {
	var req registrationRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	reg, wk, err := d.template(req.endpointRequest, req.Stream, req.ID)
	if err != nil {
		return nil, err
	}
	if req.FromSeq != nil {
		if *req.FromSeq == 0 { // as window: the library reads 0 as 1
			return nil, journal.Invalid("from_seq", "is 0: it must be 1 or more (the first seq to deliver)")
		}
		reg.NextSeq = *req.FromSeq
	}
	if req.Rate != nil {
		if reg.Rate, err = store.ParseRate("rate", *req.Rate); err != nil {
			return nil, err
		}
	}
	tok := operator.TokenOf(r.Context())
	if !tok.Sees(reg.Stream) {
		return nil, operator.Outside(tok, store.NotFound(reg.Stream, reg.ID))
	}
	if err := operator.CheckHeldKey(r.Context(), scope(r, d.store), tok, reg); err != nil {
		return nil, err
	}
	st, old, secret, err := operator.Register(r.Context(), scope(r, d.store), wk.Check, reg)
	if err != nil {
		return nil, apiFields(err)
	}
	code := http.StatusCreated
	if old != nil {
		code = http.StatusOK
	}
	var warnings []string                                                           // the transport's refusals, each naming the flag that lifts it: another daemon may allow the URL
	if tr, ok := d.opts.Transport.(interface{ Refusals(raw string) []error }); ok { // transport.HTTP
		for _, err := range tr.Refusals(st.URL) {
			warnings = append(warnings, "this daemon's deliveries refuse this URL and would park the registration: "+err.Error())
		}
	}
	if note := operator.WindowNote(st.Window, wk.MaxPerHost(), "this daemon's"); note != "" {
		warnings = append(warnings, note)
	}
	if old != nil && req.FromSeq != nil && *req.FromSeq != st.NextSeq { // as herald register says of --from-seq
		warnings = append(warnings, fmt.Sprintf("from_seq %d applies to a new registration only: the cursor stays at %d (POST /v1/registration/skip or rewind on the admin address moves it)", *req.FromSeq, st.NextSeq))
	}
	return withStatus{code, operator.RegisteredView{RegistrationView: operator.Held(nil).View(st), Secret: secret, Warnings: warnings}}, nil
}

// subscriptionRequest is the body of POST /v1/subscriptions.
type subscriptionRequest struct {
	StreamPrefix string `json:"stream_prefix"`
	ID           string `json:"id"`
	From         string `json:"from"`
	endpointRequest
}

func (d *Daemon) postSubscription(r *http.Request) (any, error) {
	var req subscriptionRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	reg, wk, err := d.template(req.endpointRequest, req.StreamPrefix+"x", req.ID)
	if err != nil {
		return nil, err
	}
	var fromHead bool
	switch req.From {
	case "", "start":
	case "head":
		fromHead = true
	default:
		return nil, journal.Invalid("from", "%q must be start or head", req.From)
	}
	sub := store.SubscriptionOf(req.StreamPrefix, reg, fromHead)
	if err := sub.Validate(); err != nil {
		return nil, apiFields(err)
	}
	st, secret, err := operator.Subscribe(r.Context(), scope(r, d.store), wk.Check, sub, req.From != "")
	if err != nil {
		return nil, apiFields(err)
	}
	wk.Wake()
	v, err := operator.Subscribed(r.Context(), scope(r, d.store), st, secret)
	if err != nil {
		d.opts.Logger.Warn("herald: subscribed", "err", err)
	}
	return withStatus{http.StatusOK, v}, nil
}

// recordStatus answers GET /v1/records/status?id=ID or ?stream=S&seq=N.
func (d *Daemon) recordStatus(r *http.Request) (any, error) {
	q, err := strictQuery(r, "a record is named by ?id=… or ?stream=…&seq=…", "id", "stream", "seq")
	if err != nil {
		return nil, err
	}
	return operator.RecordStatusOf(r.Context(), scope(r, d.store), q.Get("id"), q.Get("stream"), q.Get("seq"))
}

// apiStatus answers GET /v1/status: operator.Status's counts.
type apiStatus struct {
	Namespaces map[string]operator.NamespaceView `json:"namespaces"`
	Unnumbered store.Unnumbered                  `json:"unnumbered"`
}

func (d *Daemon) status(r *http.Request) (any, error) {
	if r.URL.RawQuery != "" {
		return nil, journal.Invalid("query", "is not read: GET /v1/status takes no parameters")
	}
	st, err := operator.StatusAt(r.Context(), d.store, d.opts.Now())
	if err != nil {
		return nil, err
	}
	return apiStatus{st.Namespaces, st.Unnumbered}, nil
}

// openAPIYAML is the HTTP API's OpenAPI 3.1 document, written by hand.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// openAPIJSON is the document as GET /v1/openapi.json serves it.
var openAPIJSON = func() []byte {
	var doc any
	err := yaml.Unmarshal(openAPIYAML, &doc)
	b, jerr := json.MarshalIndent(doc, "", "  ")
	if err = cmp.Or(err, jerr); err != nil {
		panic("daemon: openapi.yaml: " + err.Error()) // embedded and tested: a build defect, not input
	}
	return append(b, '\n')
}()

// wake wakes namespace's worker, if this daemon runs one.
func (d *Daemon) wake(namespace string) {
	if wk := d.byNS[namespace]; wk != nil {
		wk.Wake()
	}
}

// withPage serves the operator's page, which authenticates by itself,
// under /ui/ beside the admin API, and sends GET / there.
func withPage(api http.Handler, pg *page.Page) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(page.Prefix, pg)
	mux.Handle("GET /{$}", http.RedirectHandler(page.Prefix, http.StatusFound))
	mux.Handle("/", api)
	return mux
}

// adminHandler serves the admin JSON API (Daemon.AdminHandler): bothRoutes
// and the admin's own.
func adminHandler(db store.Backend, g gate, now func() time.Time, woke func(namespace string)) http.Handler {
	mux := http.NewServeMux()
	for pattern, e := range bothRoutes(db, now, woke) {
		mux.Handle(pattern, e)
	}
	mux.Handle("GET /v1/hosts", endpoint(func(r *http.Request) (any, error) {
		q, err := strictQuery(r, "GET /v1/hosts?host=…&state=…&limit=…&after=…", "host", "state", "limit", "after")
		if err != nil {
			return nil, err
		}
		hq := store.HostQuery{Host: q.Get("host"), State: q.Get("state"), After: q.Get("after")}
		if hq.Limit, err = limitParam(q); err != nil {
			return nil, err
		}
		hs, err := db.Hosts(r.Context(), hq)
		if hs == nil {
			hs = []store.Host{}
		}
		return hs, err
	}))
	mux.Handle("POST /v1/hosts/reset", endpoint(func(r *http.Request) (any, error) {
		q, err := strictQuery(r, "one host: /v1/hosts/reset?host=…", "host")
		if err == nil && q.Get("host") == "" {
			err = journal.Invalid("query", "host is a required query parameter (/v1/hosts/reset?host=…)")
		}
		var host string
		if err == nil {
			host, err = operator.HostArg(q.Get("host"))
		}
		if err != nil {
			return nil, err
		}
		return db.ResetHost(r.Context(), host, now())
	}))
	mux.Handle("GET /v1/evidence", keyed(nil, []string{"limit"}, func(r *http.Request, k store.Key, q url.Values) (any, error) {
		limit, err := limitParam(q) // 0: the store's default
		if err != nil {
			return nil, err
		}
		return operator.Evidence(r.Context(), scope(r, db), k.Stream, k.ID, limit)
	}))
	// move serves skip and rewind: the registration after the move.
	move := func(optional []string, do func(r *http.Request, q url.Values, k store.Key, toSeq uint64) error) endpoint {
		return keyed([]string{"to_seq"}, optional, func(r *http.Request, k store.Key, q url.Values) (any, error) {
			toSeq, err := strconv.ParseUint(q.Get("to_seq"), 10, 64)
			if err != nil {
				return nil, journal.Invalid("to_seq", "%q is not a seq", q.Get("to_seq"))
			}
			if err := do(r, q, k, toSeq); err != nil {
				return nil, err
			}
			st, err := scope(r, db).Get(r.Context(), k.Stream, k.ID)
			return operator.Held(nil).View(st), err
		})
	}
	mux.Handle("POST /v1/registration/skip", move([]string{"reason"}, func(r *http.Request, q url.Values, k store.Key, toSeq uint64) error {
		reason := cmp.Or(q.Get("reason"), "skipped by an operator (admin API)")
		return scope(r, db).Skip(r.Context(), k.Stream, k.ID, toSeq, now(), reason)
	}))
	mux.Handle("POST /v1/registration/rewind", move(nil, func(r *http.Request, _ url.Values, k store.Key, toSeq uint64) error {
		return scope(r, db).Rewind(r.Context(), k.Stream, k.ID, toSeq, now())
	}))
	return guard(mux, g, "herald admin", "HERALD_ADMIN_TOKEN")
}

func unparkOne(db store.Backend, now func() time.Time, woke func(namespace string)) endpoint {
	return keyed(nil, nil, func(r *http.Request, k store.Key, _ url.Values) (any, error) {
		v, err := operator.Unpark(r.Context(), scope(r, db), k.Stream, k.ID, now())
		if err == nil && v.WasParked {
			woke(v.Namespace)
		}
		return v, err
	})
}

// pauseOne answers POST /v1/registration/pause (resume false) and
// /resume on both APIs: ?by= names who (default operator.ActedBy), pause's
// ?reason= why.
func pauseOne(db store.Backend, resume bool, now func() time.Time, woke func(namespace string)) endpoint {
	optional := []string{"by", "reason"}
	if resume {
		optional = optional[:1]
	}
	return keyed(nil, optional, func(r *http.Request, k store.Key, q url.Values) (any, error) {
		by := cmp.Or(q.Get("by"), operator.ActedBy(operator.TokenOf(r.Context()), "API"))
		v, err := operator.Pause(r.Context(), scope(r, db), k.Stream, k.ID, resume, now(), by, q.Get("reason"))
		if err == nil && resume && v.Changed {
			woke(v.Namespace)
		}
		return v, err
	})
}

// resendOne answers POST /v1/registration/resend on both APIs: ?seq= the
// record, ?by= who asks (default operator.ActedBy); it wakes the
// registration's worker, which sends it.
func resendOne(db store.Backend, now func() time.Time, woke func(namespace string)) endpoint {
	return keyed([]string{"seq"}, []string{"by"}, func(r *http.Request, k store.Key, q url.Values) (any, error) {
		seq, err := strconv.ParseUint(q.Get("seq"), 10, 64)
		if err != nil || seq == 0 {
			return nil, journal.Invalid("seq", "%q is not a seq (1, 2, …)", q.Get("seq"))
		}
		by := cmp.Or(q.Get("by"), operator.ActedBy(operator.TokenOf(r.Context()), "API"))
		v, err := operator.Resend(r.Context(), scope(r, db), k.Stream, k.ID, seq, now(), by)
		if err == nil {
			woke(v.Namespace)
		}
		return withStatus{http.StatusAccepted, v}, err
	})
}

// unparkAll answers POST /v1/registrations/unpark on both APIs, and wakes
// the workers of those unparked that this daemon runs.
func unparkAll(db store.Backend, now func() time.Time, woke func(namespace string)) endpoint {
	return func(r *http.Request) (any, error) {
		q, err := strictQuery(r, "one registration: /v1/registration/unpark?stream=…&id=…", "stream", "namespace")
		if err != nil {
			return nil, fmt.Errorf("%w; nothing was unparked", err)
		}
		lq, err := operator.UnparkAllQuery(q.Get("stream"), q.Get("namespace"), q.Has)
		if err != nil {
			return nil, err
		}
		out, err := operator.UnparkAll(r.Context(), scope(r, db), lq, now())
		for _, v := range out.Unparked {
			woke(v.Namespace)
		}
		if err != nil {
			return withStatus{web.HTTPStatus(err), struct {
				Error string `json:"error"`
				operator.UnparkedAll
			}{err.Error(), out}}, nil
		}
		return out, nil
	}
}

func listRegistrations(db store.Backend) endpoint {
	return func(r *http.Request) (any, error) {
		q, err := strictQuery(r, "filters of the list; one registration's evidence and actions take ?stream=…&id=…",
			"stream", "namespace", "parked", "lagging", "limit", "after_stream", "after_id")
		if err != nil {
			return nil, err
		}
		lq := store.ListQuery{Stream: q.Get("stream"), Namespace: q.Get("namespace"),
			After: store.Key{Stream: q.Get("after_stream"), ID: q.Get("after_id")}}
		if err := operator.CheckList(lq); err != nil {
			return nil, err
		}
		for name, dst := range map[string]*bool{"parked": &lq.Parked, "lagging": &lq.Lagging} {
			if *dst, err = boolParam(q, name); err != nil {
				return nil, err
			}
		}
		if lq.Limit, err = limitParam(q); err != nil {
			return nil, err
		}
		sts, err := scope(r, db).List(r.Context(), lq)
		if err != nil {
			return nil, err
		}
		held, err := operator.HeldHosts(r.Context(), db)
		return held.Views(sts), err
	}
}
