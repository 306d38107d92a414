package daemon

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// withPage serves the operator's page (daemon/page) under /ui/ beside the
// admin API, and sends GET / there. The page does its own authentication
// (a login form for the same token), so it is mounted before the API's.
func withPage(api http.Handler, pg *page.Page) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(page.Prefix, pg)
	mux.Handle("GET /{$}", http.RedirectHandler(page.Prefix, http.StatusFound))
	mux.Handle("/", api)
	return mux
}

// adminHandler serves the admin JSON API (Daemon.AdminHandler) on store,
// with token and now, the clock of operator actions. woke, if not nil, is
// told the namespace of each registration an unpark made due.
func adminHandler(store push.Store, token string, now func() time.Time, woke func(namespace string)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/hosts", func(w http.ResponseWriter, r *http.Request) {
		q, err := strictQuery(r, "GET /v1/hosts?host=…&state=…&limit=…&after=…", "host", "state", "limit", "after")
		if err != nil {
			writeError(w, err)
			return
		}
		hq := push.HostQuery{Host: q.Get("host"), State: q.Get("state"), After: q.Get("after")}
		if hq.Limit, err = intParam(q.Get("limit"), "limit"); err != nil {
			writeError(w, err)
			return
		}
		hs, err := store.Hosts(r.Context(), hq)
		if hs == nil {
			hs = []push.Host{}
		}
		answer(w, hs, err)
	})
	mux.HandleFunc("POST /v1/hosts/reset", func(w http.ResponseWriter, r *http.Request) {
		q, err := strictQuery(r, "one host: /v1/hosts/reset?host=…", "host")
		if err == nil && q.Get("host") == "" {
			err = journal.Invalid("query", "host is a required query parameter (/v1/hosts/reset?host=…)")
		}
		if err != nil {
			writeError(w, err)
			return
		}
		h, err := store.ResetHost(r.Context(), operator.HostArg(q.Get("host")), now())
		answer(w, h, err)
	})
	mux.HandleFunc("GET /v1/registrations", func(w http.ResponseWriter, r *http.Request) { listRegistrations(w, r, store) })
	mux.HandleFunc("GET /v1/evidence", func(w http.ResponseWriter, r *http.Request) {
		stream, id, q, err := registrationKey(r, nil, "limit")
		var limit int // 0: the store's default
		if err == nil {
			limit, err = intParam(q.Get("limit"), "limit")
		}
		if err != nil {
			writeError(w, err)
			return
		}
		evs, err := operator.Evidence(r.Context(), store, stream, id, limit)
		answer(w, evs, err)
	})
	mux.HandleFunc("POST /v1/registration/unpark", unparkOne(store, now, woke))
	mux.HandleFunc("POST /v1/registrations/unpark", unparkAll(store, now, woke))
	// move serves skip and rewind: the registration after the move.
	move := func(required []string, optional []string, do func(r *http.Request, q url.Values, stream, id string, toSeq uint64) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			stream, id, q, err := registrationKey(r, required, optional...)
			var toSeq uint64
			if err == nil {
				if toSeq, err = strconv.ParseUint(q.Get("to_seq"), 10, 64); err != nil {
					err = journal.Invalid("to_seq", "%q is not a seq", q.Get("to_seq"))
				}
			}
			if err == nil {
				err = do(r, q, stream, id, toSeq)
			}
			if err != nil {
				writeError(w, err)
				return
			}
			st, err := store.Get(r.Context(), stream, id)
			answer(w, operator.Held(nil).View(st), err)
		}
	}
	mux.HandleFunc("POST /v1/registration/skip", move([]string{"to_seq"}, []string{"reason"}, func(r *http.Request, q url.Values, stream, id string, toSeq uint64) error {
		reason := q.Get("reason")
		if reason == "" {
			reason = "skipped by an operator (admin API)"
		}
		return store.Skip(r.Context(), stream, id, toSeq, now(), reason)
	}))
	mux.HandleFunc("POST /v1/registration/rewind", move([]string{"to_seq"}, nil, func(r *http.Request, _ url.Values, stream, id string, toSeq uint64) error {
		return store.Rewind(r.Context(), stream, id, toSeq, now())
	}))
	return guard(mux, token, "herald admin", "HERALD_ADMIN_TOKEN")
}

// unparkOne answers POST /v1/registration/unpark?stream=S&id=ID on both
// APIs (operator.Unpark), and wakes the registration's worker.
func unparkOne(store push.Store, now func() time.Time, woke func(namespace string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		stream, id, _, err := registrationKey(r, nil)
		if err != nil {
			writeError(w, err)
			return
		}
		v, err := operator.Unpark(r.Context(), store, stream, id, now())
		if err == nil && v.WasParked && woke != nil {
			woke(v.Namespace)
		}
		answer(w, v, err)
	}
}

// unparkAll answers POST /v1/registrations/unpark?stream=S&namespace=NS on
// both APIs (operator.UnparkAll), and wakes the workers of those unparked.
// What would unpark more than asked is refused (strictQuery, an empty
// filter); a namespace no daemon serves matches nothing, since several
// daemons may share a database. A failure part way is answered with those
// unparked before it, which stay unparked.
func unparkAll(store push.Store, now func() time.Time, woke func(namespace string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, err := strictQuery(r, "one registration: /v1/registration/unpark?stream=…&id=…", "stream", "namespace")
		var lq push.ListQuery
		if err == nil {
			lq, err = operator.UnparkAllQuery(q.Get("stream"), q.Get("namespace"), q.Has)
		}
		if inv, ok := errors.AsType[*journal.InvalidError](err); ok && !strings.HasSuffix(inv.Reason, "nothing was unparked") {
			err = &journal.InvalidError{Field: inv.Field, Reason: inv.Reason + "; nothing was unparked"}
		}
		if err != nil {
			writeError(w, err)
			return
		}
		out, err := operator.UnparkAll(r.Context(), store, lq, now())
		for _, v := range out.Unparked {
			if woke != nil {
				woke(v.Namespace)
			}
		}
		if err != nil {
			writeJSON(w, statusOf(err), struct {
				Error string `json:"error"`
				operator.UnparkedAll
			}{err.Error(), out})
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// listRegistrations answers GET /v1/registrations on both APIs.
func listRegistrations(w http.ResponseWriter, r *http.Request, store push.Store) {
	q, err := strictQuery(r, "filters of the list; one registration's evidence and actions take ?stream=…&id=…",
		"stream", "namespace", "parked", "lagging", "limit", "after_stream", "after_id")
	if err != nil {
		writeError(w, err)
		return
	}
	lq := push.ListQuery{Stream: q.Get("stream"), Namespace: q.Get("namespace"),
		After: push.Key{Stream: q.Get("after_stream"), ID: q.Get("after_id")}}
	if err := operator.CheckList(lq); err != nil {
		writeError(w, err)
		return
	}
	if (lq.After.Stream == "") != (lq.After.ID == "") {
		writeError(w, journal.Invalid("query", "after_stream and after_id go together: the stream and id of the last registration listed"))
		return
	}
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
	if lq.Limit, err = intParam(q.Get("limit"), "limit"); err != nil {
		writeError(w, err)
		return
	}
	sts, err := store.List(r.Context(), lq)
	if err != nil {
		writeError(w, err)
		return
	}
	held, err := operator.HeldHosts(r.Context(), store)
	answer(w, held.Views(sts), err)
}
