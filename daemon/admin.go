package daemon

import (
	"cmp"
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
		h, err := store.ResetHost(r.Context(), operator.HostArg(q.Get("host")), now())
		return h, err
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
