package daemon

import (
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// writeJSON writes v as indented JSON and a newline, with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// errorBody is every error answer: {"error": "..."}. Values echoed in the
// message are JSON-escaped by the encoder, never written raw.
type errorBody struct {
	Error string `json:"error"`
}

// refuse answers {"error": …} with code.
func refuse(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, errorBody{fmt.Sprintf(format, args...)})
}

// statusOf is an error's HTTP status: 400 bad input, 404 nothing there,
// 409 a conflict or a sealed stream, a statusError's own, else 500.
func statusOf(err error) int {
	switch se, ok := errors.AsType[statusError](err); {
	case ok:
		return se.code
	case errors.Is(err, journal.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, journal.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, journal.ErrConflict), errors.Is(err, journal.ErrSealed):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// statusError is an error answered with a status of its own (413, 415).
type statusError struct {
	code int
	msg  string
}

func (e statusError) Error() string { return e.msg }

// endpoint is what a route of either API does: its answer, with 200 (or
// the status a withStatus gives), or an error, with statusOf's status.
type endpoint func(r *http.Request) (any, error)

// withStatus is an answer with another status than 200; a nil v, none
// with no body.
type withStatus struct {
	code int
	v    any
}

func (e endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v, err := e(r)
	switch s, ok := v.(withStatus); {
	case err != nil:
		writeJSON(w, statusOf(err), errorBody{err.Error()})
	case ok && s.v == nil:
		w.WriteHeader(s.code)
	case ok:
		writeJSON(w, s.code, s.v)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

// guard wraps mux: bearer authentication when token is set (realm names
// the API), else the rules of an open API (package doc): 403 for a Host
// that is not a loopback name and for a browser's POST or DELETE from
// another origin (http.CrossOriginProtection). Requests no route serves are
// answered 404 or 405, as JSON.
func guard(mux *http.ServeMux, token, realm, envVar string) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case token == "" && !operator.LoopbackHost(r.Host):
			refuse(w, http.StatusForbidden, "without %s this API answers only requests to a loopback address, not to %q", envVar, r.Host)
			return
		case token == "" && cop.Check(r) != nil:
			refuse(w, http.StatusForbidden, "refused: a browser sent this %s from a page of another origin (its Sec-Fetch-Site or Origin header says so), "+
				"which this API, open without %s, does not take; a program's request carries no Origin header, or set %s and send its token", r.Method, envVar, envVar)
			return
		case token != "":
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", realm))
				refuse(w, http.StatusUnauthorized, "a valid bearer token (%s) is required", envVar)
				return
			}
		}
		if _, pattern := mux.Handler(r); pattern == "" {
			notRouted(w, r, mux)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// notRouted answers a request no route serves: 405 with Allow when the path
// is served for other methods, else 404.
func notRouted(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		refuse(w, http.StatusMethodNotAllowed, "%s %s is not served: use %s", r.Method, r.URL.Path, strings.Join(allow, " or "))
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		// The admin address and the API address serve different routes.
		refuse(w, http.StatusNotFound, "no such endpoint at this address: %s (README, \"The command and the operator's guide\", lists the admin address's routes; GET /v1/openapi.json the API address's)", r.URL.Path)
		return
	}
	refuse(w, http.StatusNotFound, "no such endpoint: %s (herald's APIs are under /v1/)", r.URL.Path)
}

// strictQuery reads r's query parameters, each one of allowed and given
// once, and refuses (journal.ErrInvalid) what a lenient reading would take
// as asking for more than was meant: a query that does not parse, another
// parameter (hint says where it belongs), one given twice, or a body (a
// body that held the filter would go unread).
func strictQuery(r *http.Request, hint string, allowed ...string) (url.Values, error) {
	if r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && readsAByte(r.Body)) {
		return nil, journal.Invalid("body", "is not read: %s takes its parameters in the query (?%s=…)", r.URL.Path, allowed[0])
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, journal.Invalid("query", "does not parse (%v)", err)
	}
	for _, name := range slices.Sorted(maps.Keys(q)) { // the same one named each time
		vs := q[name]
		switch {
		case !slices.Contains(allowed, name):
			return nil, journal.Invalid(name, "is not a parameter of %s, which takes %s (%s)", r.URL.Path, strings.Join(allowed, ", "), hint)
		case len(vs) > 1:
			return nil, journal.Invalid(name, "is given %d times; give it once", len(vs))
		}
	}
	return q, nil
}

// readsAByte reports whether a body without Content-Length holds a byte.
func readsAByte(body io.Reader) bool {
	var b [1]byte
	n, _ := body.Read(b[:])
	return n > 0
}

// intParam reads an optional integer query parameter; empty is 0.
func intParam(s, name string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, journal.Invalid(name, "%q is not a number", s)
	}
	if n < 1 {
		return 0, journal.Invalid(name, "%d must be at least 1 (leave %s out for the default)", n, name)
	}
	return n, nil
}

// keyed is an endpoint on the registration its query names: stream and
// id, both required and well formed, in a strictQuery that may hold the
// route's other parameters, required and optional, which do reads from q.
func keyed(required, optional []string, do func(r *http.Request, k push.Key, q url.Values) (any, error)) endpoint {
	return func(r *http.Request) (any, error) {
		names := append([]string{"stream", "id"}, required...)
		q, err := strictQuery(r, "a registration is named by ?stream=…&id=…", append(names, optional...)...)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if q.Get(name) == "" {
				example := make([]string, len(names))
				for i, n := range names {
					example[i] = n + "=…"
				}
				return nil, journal.Invalid("query", "%s and %s are required query parameters (%s?%s)",
					strings.Join(names[:len(names)-1], ", "), names[len(names)-1], r.URL.Path, strings.Join(example, "&"))
			}
		}
		k := push.Key{Stream: q.Get("stream"), ID: q.Get("id")}
		if err := cmp.Or(journal.ValidateStream(k.Stream), journal.ValidateID("id", k.ID)); err != nil {
			return nil, err
		}
		return do(r, k, q)
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

// adminHandler serves the admin JSON API (Daemon.AdminHandler) on store,
// with token and now, the clock of operator actions. woke is
// told the namespace of each registration an unpark made due.
func adminHandler(store push.Store, token string, now func() time.Time, woke func(namespace string)) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /v1/hosts", endpoint(func(r *http.Request) (any, error) {
		q, err := strictQuery(r, "GET /v1/hosts?host=…&state=…&limit=…&after=…", "host", "state", "limit", "after")
		if err != nil {
			return nil, err
		}
		hq := push.HostQuery{Host: q.Get("host"), State: q.Get("state"), After: q.Get("after")}
		if hq.Limit, err = intParam(q.Get("limit"), "limit"); err != nil {
			return nil, err
		}
		hs, err := store.Hosts(r.Context(), hq)
		if hs == nil {
			hs = []push.Host{}
		}
		return hs, err
	}))
	mux.Handle("POST /v1/hosts/reset", endpoint(func(r *http.Request) (any, error) {
		q, err := strictQuery(r, "one host: /v1/hosts/reset?host=…", "host")
		if err == nil && q.Get("host") == "" {
			err = journal.Invalid("query", "host is a required query parameter (/v1/hosts/reset?host=…)")
		}
		if err != nil {
			return nil, err
		}
		return store.ResetHost(r.Context(), operator.HostArg(q.Get("host")), now())
	}))
	mux.Handle("GET /v1/registrations", listRegistrations(store))
	mux.Handle("GET /v1/evidence", keyed(nil, []string{"limit"}, func(r *http.Request, k push.Key, q url.Values) (any, error) {
		limit, err := intParam(q.Get("limit"), "limit") // 0: the store's default
		if err != nil {
			return nil, err
		}
		return operator.Evidence(r.Context(), store, k.Stream, k.ID, limit)
	}))
	mux.Handle("POST /v1/registration/unpark", unparkOne(store, now, woke))
	mux.Handle("POST /v1/registrations/unpark", unparkAll(store, now, woke))
	// move serves skip and rewind, whose other parameters are optional:
	// the registration after the move.
	move := func(optional []string, do func(r *http.Request, q url.Values, k push.Key, toSeq uint64) error) endpoint {
		return keyed([]string{"to_seq"}, optional, func(r *http.Request, k push.Key, q url.Values) (any, error) {
			toSeq, err := strconv.ParseUint(q.Get("to_seq"), 10, 64)
			if err != nil {
				return nil, journal.Invalid("to_seq", "%q is not a seq", q.Get("to_seq"))
			}
			if err := do(r, q, k, toSeq); err != nil {
				return nil, err
			}
			st, err := store.Get(r.Context(), k.Stream, k.ID)
			return operator.Held(nil).View(st), err
		})
	}
	mux.Handle("POST /v1/registration/skip", move([]string{"reason"}, func(r *http.Request, q url.Values, k push.Key, toSeq uint64) error {
		reason := cmp.Or(q.Get("reason"), "skipped by an operator (admin API)")
		return store.Skip(r.Context(), k.Stream, k.ID, toSeq, now(), reason)
	}))
	mux.Handle("POST /v1/registration/rewind", move(nil, func(r *http.Request, _ url.Values, k push.Key, toSeq uint64) error {
		return store.Rewind(r.Context(), k.Stream, k.ID, toSeq, now())
	}))
	return guard(mux, token, "herald admin", "HERALD_ADMIN_TOKEN")
}

// unparkOne answers POST /v1/registration/unpark?stream=S&id=ID on both
// APIs (operator.Unpark), and wakes the registration's worker.
func unparkOne(store push.Store, now func() time.Time, woke func(namespace string)) endpoint {
	return keyed(nil, nil, func(r *http.Request, k push.Key, _ url.Values) (any, error) {
		v, err := operator.Unpark(r.Context(), store, k.Stream, k.ID, now())
		if err == nil && v.WasParked {
			woke(v.Namespace)
		}
		return v, err
	})
}

// unparkAll answers POST /v1/registrations/unpark?stream=S&namespace=NS on
// both APIs (operator.UnparkAll), and wakes the workers of those unparked;
// a namespace this daemon does not serve is another's on the database.
func unparkAll(store push.Store, now func() time.Time, woke func(namespace string)) endpoint {
	return func(r *http.Request) (any, error) {
		q, err := strictQuery(r, "one registration: /v1/registration/unpark?stream=…&id=…", "stream", "namespace")
		var lq push.ListQuery
		if err == nil {
			lq, err = operator.UnparkAllQuery(q.Get("stream"), q.Get("namespace"), q.Has)
		}
		if inv, ok := errors.AsType[*journal.InvalidError](err); ok && !strings.HasSuffix(inv.Reason, "nothing was unparked") {
			err = &journal.InvalidError{Field: inv.Field, Reason: inv.Reason + "; nothing was unparked"}
		}
		if err != nil {
			return nil, err
		}
		out, err := operator.UnparkAll(r.Context(), store, lq, now())
		for _, v := range out.Unparked {
			woke(v.Namespace)
		}
		if err != nil {
			return withStatus{statusOf(err), struct {
				Error string `json:"error"`
				operator.UnparkedAll
			}{err.Error(), out}}, nil
		}
		return out, nil
	}
}

// listRegistrations answers GET /v1/registrations on both APIs.
func listRegistrations(store push.Store) endpoint {
	return func(r *http.Request) (any, error) {
		q, err := strictQuery(r, "filters of the list; one registration's evidence and actions take ?stream=…&id=…",
			"stream", "namespace", "parked", "lagging", "limit", "after_stream", "after_id")
		if err != nil {
			return nil, err
		}
		lq := push.ListQuery{Stream: q.Get("stream"), Namespace: q.Get("namespace"),
			After: push.Key{Stream: q.Get("after_stream"), ID: q.Get("after_id")}}
		if err := operator.CheckList(lq); err != nil {
			return nil, err
		}
		if (lq.After.Stream == "") != (lq.After.ID == "") {
			return nil, journal.Invalid("query", "after_stream and after_id go together: the stream and id of the last registration listed")
		}
		for name, dst := range map[string]*bool{"parked": &lq.Parked, "lagging": &lq.Lagging} {
			if v := q.Get(name); v != "" {
				if *dst, err = strconv.ParseBool(v); err != nil {
					return nil, journal.Invalid(name, "%q must be true or false", v)
				}
			}
		}
		if lq.Limit, err = intParam(q.Get("limit"), "limit"); err != nil {
			return nil, err
		}
		sts, err := store.List(r.Context(), lq)
		if err != nil {
			return nil, err
		}
		held, err := operator.HeldHosts(r.Context(), store)
		return held.Views(sts), err
	}
}
