package daemon

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// withPage serves the operator's page (daemon/page) under /ui/ beside the
// admin API, and sends GET / there. The page does its own authentication
// (a login form for the same token), so it is mounted before the API's.
func withPage(api http.Handler, pg *page.Page) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(page.DefaultPrefix, pg)
	mux.Handle("GET /{$}", http.RedirectHandler(page.DefaultPrefix, http.StatusFound))
	mux.Handle("/", api)
	return mux
}

// AdminStore is what the admin API works on.
type AdminStore interface {
	push.Store
}

// AdminHandler serves the admin JSON API, whose parameters are query
// parameters and whose answers are JSON:
//
//	GET  /v1/registrations?stream=&namespace=&parked=true&lagging=true&limit=&after_stream=&after_id=
//	GET  /v1/evidence?stream=S&id=ID&limit=N
//	POST /v1/registration/unpark?stream=S&id=ID
//	POST /v1/registrations/unpark?stream=S&namespace=NS   (both optional)
//	POST /v1/registration/skip?stream=S&id=ID&to_seq=N&reason=…
//	POST /v1/registration/rewind?stream=S&id=ID&to_seq=N
//	GET  /v1/hosts?state=&host=&after=&limit=
//	POST /v1/hosts/reset?host=HOST
//
// An action on one registration is POST /v1/registration/<action>, as on
// the HTTP API (Daemon.APIHandler) and as /v1/hosts/reset is on a host;
// each answers the registration after it (RegistrationView), unpark with
// was_parked (UnparkView). POST /v1/registrations/unpark unparks every
// parked registration, of the stream and the namespace when given, and
// answers those it unparked (UnparkedAll). The older names POST /v1/unpark, /v1/skip and
// /v1/rewind are deprecated: they answer the same, with a Deprecation
// header (RFC 9745) and a Link to the new name, for this release only.
//
// Every request needs "Authorization: Bearer <token>" when token is not
// empty. Errors are JSON {"error": "..."} with 400 (bad input), 401, 403
// (open, without a token: a request to a name that is not loopback, or a
// browser's from another origin; guard), 404 (no such registration or
// endpoint), 405 (another method; Allow names it) or 500; a failure part
// way through a bulk unpark answers {"error", "unparked": [...]}, those
// unparked before it (RegistrationView). now is the clock of operator
// actions (unpark, skip, rewind, reset). An unpark here wakes no worker:
// the registration is due at once and is claimed at its worker's next
// claim (Daemon.AdminHandler, the daemon's own, wakes it).
func AdminHandler(store AdminStore, token string, now func() time.Time) http.Handler {
	return adminHandler(store, token, now, nil)
}

// adminHandler is AdminHandler; woke, if not nil, is told the namespace of
// each registration an unpark made due (the daemon wakes its worker).
func adminHandler(store AdminStore, token string, now func() time.Time, woke func(namespace string)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/hosts", func(w http.ResponseWriter, r *http.Request) {
		q, err := strictQuery(r, "GET /v1/hosts?host=…&state=…&limit=…&after=…", "host", "state", "limit", "after")
		if err != nil {
			writeError(w, err)
			return
		}
		hq := push.HostQuery{Host: q.Get("host"), State: q.Get("state"), After: q.Get("after")}
		n, err := intParam(q.Get("limit"), "limit")
		if err != nil {
			writeError(w, err)
			return
		}
		hq.Limit = n
		hs, err := store.Hosts(r.Context(), hq)
		if err != nil {
			writeError(w, err)
			return
		}
		if hs == nil {
			hs = []push.Host{}
		}
		writeJSON(w, http.StatusOK, hs)
	})
	mux.HandleFunc("POST /v1/hosts/reset", func(w http.ResponseWriter, r *http.Request) {
		q, err := strictQuery(r, "one host: /v1/hosts/reset?host=…", "host")
		if err != nil {
			writeError(w, err)
			return
		}
		host := q.Get("host")
		if host == "" {
			writeError(w, journal.Invalid("query", "host is a required query parameter (/v1/hosts/reset?host=…)"))
			return
		}
		h, err := store.ResetHost(r.Context(), HostArg(host), now())
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, h)
	})
	mux.HandleFunc("GET /v1/registrations", func(w http.ResponseWriter, r *http.Request) {
		listRegistrations(w, r, store)
	})
	mux.HandleFunc("GET /v1/evidence", func(w http.ResponseWriter, r *http.Request) {
		stream, id, q, err := registrationKey(r, nil, "limit")
		if err != nil {
			writeError(w, err)
			return
		}
		limit, err := intParam(q.Get("limit"), "limit") // 0: the store's default
		if err != nil {
			writeError(w, err)
			return
		}
		evs, err := store.Evidence(r.Context(), stream, id, limit)
		if err != nil {
			writeError(w, err)
			return
		}
		if evs == nil {
			evs = []push.Evidence{}
		}
		writeJSON(w, http.StatusOK, evs)
	})
	// action serves a route of one registration; required and optional
	// are the parameters it takes beside stream and id (registrationKey).
	action := func(do func(r *http.Request, q url.Values, stream, id string, toSeq uint64) (any, error), required []string, optional ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			stream, id, q, err := registrationKey(r, required, optional...)
			if err != nil {
				writeError(w, err)
				return
			}
			var toSeq uint64
			if s := q.Get("to_seq"); s != "" {
				n, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					writeError(w, journal.Invalid("to_seq", "%q is not a seq", s))
					return
				}
				toSeq = n
			}
			v, err := do(r, q, stream, id, toSeq)
			if err != nil {
				writeError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, v)
		}
	}
	// viewAfter answers a cursor move with the registration after it.
	viewAfter := func(r *http.Request, stream, id string, err error) (any, error) {
		if err != nil {
			return nil, err
		}
		st, err := store.Get(r.Context(), stream, id)
		if err != nil {
			return nil, err
		}
		return ViewOf(st), nil
	}
	actions := map[string]http.HandlerFunc{
		"unpark": action(func(r *http.Request, _ url.Values, stream, id string, _ uint64) (any, error) {
			v, err := unpark(r.Context(), store, stream, id, now())
			if err == nil && v.WasParked && woke != nil {
				woke(v.Namespace)
			}
			return v, err
		}, nil),
		"skip": action(func(r *http.Request, q url.Values, stream, id string, toSeq uint64) (any, error) {
			reason := q.Get("reason")
			if reason == "" {
				reason = "skipped by an operator (admin API)"
			}
			return viewAfter(r, stream, id, store.Skip(r.Context(), stream, id, toSeq, now(), reason))
		}, []string{"to_seq"}, "reason"),
		"rewind": action(func(r *http.Request, _ url.Values, stream, id string, toSeq uint64) (any, error) {
			return viewAfter(r, stream, id, store.Rewind(r.Context(), stream, id, toSeq, now()))
		}, []string{"to_seq"}),
	}
	mux.HandleFunc("POST /v1/registrations/unpark", unparkAll(store, now, woke))
	for name, h := range actions {
		mux.HandleFunc("POST /v1/registration/"+name, h)
		mux.HandleFunc("POST /v1/"+name, deprecated("/v1/registration/"+name, h))
	}
	return guard(mux, token, "herald admin", "HERALD_ADMIN_TOKEN")
}

// deprecatedSince is when the admin API's /v1/unpark, /v1/skip and
// /v1/rewind gave way to /v1/registration/…: 2026-12-01, as an RFC 9745
// Deprecation date (@ unix seconds). The next release removes them.
const deprecatedSince = "@1796083200"

// deprecated serves h under a deprecated name: the same answer, with a
// Deprecation header and a Link to successor, its new name.
func deprecated(successor string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Deprecation", deprecatedSince)
		w.Header().Set("Link", "<"+successor+">; rel=\"successor-version\"")
		h(w, r)
	}
}

// UnparkView answers an unpark on both APIs: the registration after it,
// and whether it was parked. WasParked false means nothing changed, as
// herald unpark says ("was not parked; nothing changed").
type UnparkView struct {
	RegistrationView
	WasParked bool `json:"was_parked"`
}

// unpark unparks stream/id at at (push.Store.Unpark) and answers what it
// did. Errors are the store's: journal.ErrNotFound for no such
// registration, journal.ErrInvalid for a bad at.
func unpark(ctx context.Context, store push.Store, stream, id string, at time.Time) (UnparkView, error) {
	before, err := store.Get(ctx, stream, id)
	if err != nil {
		return UnparkView{}, err
	}
	if err := store.Unpark(ctx, stream, id, at); err != nil {
		return UnparkView{}, err
	}
	after, err := store.Get(ctx, stream, id)
	if err != nil {
		return UnparkView{}, err
	}
	return UnparkView{RegistrationView: ViewOf(after), WasParked: before.Parked}, nil
}

// UnparkedAll answers POST /v1/registrations/unpark on both APIs: each
// registration unparked, as it is after its unpark.
type UnparkedAll struct {
	Unparked []RegistrationView `json:"unparked"`
}

// unparkAll answers POST /v1/registrations/unpark?stream=S&namespace=NS on
// both APIs: every parked registration (of the stream and of the
// namespace, when given) unparked at now() (push.UnparkAll), each with its
// evidence. woke is told each unparked registration's namespace (nil:
// none to tell). An error after some were unparked is a 500 whose body
// lists them. Every input that would unpark more than asked is refused
// (strictQuery, and an empty parameter: an unset variable in a script). A namespace no daemon of this one's database
// serves just matches nothing: several daemons, each serving its own
// namespaces, may share a database.
func unparkAll(store push.Store, now func() time.Time, woke func(namespace string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		refuse := func(err error) {
			if inv, ok := errors.AsType[*journal.InvalidError](err); ok {
				err = &journal.InvalidError{Field: inv.Field, Reason: inv.Reason + "; nothing was unparked"}
			}
			writeError(w, err)
		}
		q, err := strictQuery(r, "one registration: /v1/registration/unpark?stream=…&id=…", "stream", "namespace")
		if err != nil {
			refuse(err)
			return
		}
		for _, name := range slices.Sorted(maps.Keys(q)) {
			if q.Get(name) == "" {
				refuse(journal.Invalid(name, "is empty; leave it out to unpark every %s's", name))
				return
			}
		}
		if err := checkListQuery(q); err != nil {
			refuse(err)
			return
		}
		lq := push.ListQuery{Stream: q.Get("stream"), Namespace: q.Get("namespace")}
		done, err := push.UnparkAll(r.Context(), store, lq, now())
		out := UnparkedAll{Unparked: make([]RegistrationView, 0, len(done))}
		for _, st := range done {
			out.Unparked = append(out.Unparked, ViewOf(st))
			if woke != nil {
				woke(st.Namespace)
			}
		}
		if err != nil {
			// Those unparked before the error stay unparked: say which.
			writeJSON(w, statusOf(err), unparkAllError{Error: err.Error(), Unparked: out.Unparked})
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// unparkAllError is POST /v1/registrations/unpark's error: what failed,
// and those unparked before it.
type unparkAllError struct {
	Error    string             `json:"error"`
	Unparked []RegistrationView `json:"unparked"`
}

// listRegistrations answers GET /v1/registrations on both APIs.
func listRegistrations(w http.ResponseWriter, r *http.Request, store AdminStore) {
	q, err := strictQuery(r, "filters of the list; one registration's evidence and actions take ?stream=…&id=…",
		"stream", "namespace", "parked", "lagging", "limit", "after_stream", "after_id")
	if err != nil {
		writeError(w, err)
		return
	}
	if err := checkListQuery(q); err != nil {
		writeError(w, err)
		return
	}
	lq := push.ListQuery{Stream: q.Get("stream"), Namespace: q.Get("namespace"),
		After: push.Key{Stream: q.Get("after_stream"), ID: q.Get("after_id")}}
	for name, dst := range map[string]*bool{"parked": &lq.Parked, "lagging": &lq.Lagging} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				writeError(w, journal.Invalid(name, "%q must be true or false", v))
				return
			}
			*dst = b
		}
	}
	n, err := intParam(q.Get("limit"), "limit")
	if err != nil {
		writeError(w, err)
		return
	}
	lq.Limit = n
	sts, err := store.List(r.Context(), lq)
	if err != nil {
		writeError(w, err)
		return
	}
	held, err := HeldHosts(r.Context(), store)
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]RegistrationView, len(sts))
	for i, s := range sts {
		out[i] = held.View(s)
	}
	writeJSON(w, http.StatusOK, out)
}

// checkListQuery refuses a registration list's filter that no registration
// can match, as the bulk unpark does, and half a page position (the CLI's
// --after-stream and --after-id go together too).
func checkListQuery(q url.Values) error {
	for _, name := range []string{"stream", "after_stream"} {
		if v := q.Get(name); v != "" {
			if err := journal.ValidateStream(v); err != nil {
				if inv, ok := errors.AsType[*journal.InvalidError](err); ok {
					err = &journal.InvalidError{Field: name, Reason: inv.Reason}
				}
				return err
			}
		}
	}
	if v := q.Get("after_id"); v != "" {
		if err := journal.ValidateID("after_id", v); err != nil {
			return err
		}
	}
	if v := q.Get("namespace"); v != "" {
		if err := push.ValidateNamespace(v); err != nil {
			return err
		}
	}
	if (q.Get("after_stream") == "") != (q.Get("after_id") == "") {
		return journal.Invalid("query", "after_stream and after_id go together: the stream and id of the last registration listed")
	}
	return nil
}

// strictQuery reads r's query parameters, which must be among allowed and
// each given once, and refuses (journal.ErrInvalid, a 400) what a lenient
// reading would take as asking for more than was meant: a query that does
// not parse (url.Values would drop the pair), another parameter (hint says
// where it belongs), a parameter twice, or a body (the filter must be in
// the query: a body that held it would go unread).
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

// readsAByte reports whether body holds at least one byte (a chunked body
// has no Content-Length).
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

// HostArg reads a host as an operator names it: the host:port herald hosts
// lists, or any URL on it.
func HostArg(s string) string {
	if strings.Contains(s, "://") {
		return push.HostOf(s)
	}
	return strings.ToLower(s)
}
