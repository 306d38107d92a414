package cli

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
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

// adminHandler serves the admin JSON API:
//
//	GET  /v1/registrations?stream=&namespace=&parked=true&lagging=true&limit=&after_stream=&after_id=
//	GET  /v1/evidence?stream=S&id=ID&limit=N
//	POST /v1/unpark?stream=S&id=ID
//	POST /v1/skip?stream=S&id=ID&to_seq=N&reason=…
//	POST /v1/rewind?stream=S&id=ID&to_seq=N
//	GET  /v1/hosts?state=&host=&after=&limit=
//	POST /v1/hosts/reset?host=HOST
//
// Every request needs "Authorization: Bearer <token>" when a token is set.
// Errors are JSON {"error": "..."} with 400 (bad input), 401, 404 (no such
// registration or endpoint), 405 (another method; Allow names it) or 500.
func adminHandler(store adminStore, token string, now func() time.Time) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/hosts", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		hq := push.HostQuery{Host: q.Get("host"), State: q.Get("state"), After: q.Get("after")}
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				writeAdminError(w, journal.Invalid("limit", "%q is not a number", s))
				return
			}
			hq.Limit = n
		}
		hs, err := store.Hosts(r.Context(), hq)
		if err != nil {
			writeAdminError(w, err)
			return
		}
		if hs == nil {
			hs = []push.Host{}
		}
		_ = printJSON(w, hs)
	})
	mux.HandleFunc("POST /v1/hosts/reset", func(w http.ResponseWriter, r *http.Request) {
		host := r.URL.Query().Get("host")
		if host == "" {
			writeAdminError(w, journal.Invalid("query", "host is a required query parameter (/v1/hosts/reset?host=…)"))
			return
		}
		h, err := store.ResetHost(r.Context(), hostArg(host), now())
		if err != nil {
			writeAdminError(w, err)
			return
		}
		_ = printJSON(w, h)
	})
	mux.HandleFunc("GET /v1/registrations", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		lq := push.ListQuery{Stream: q.Get("stream"), Namespace: q.Get("namespace"),
			After: push.Key{Stream: q.Get("after_stream"), ID: q.Get("after_id")}}
		for name, dst := range map[string]*bool{"parked": &lq.Parked, "lagging": &lq.Lagging} {
			if v := q.Get(name); v != "" {
				b, err := strconv.ParseBool(v)
				if err != nil {
					writeAdminError(w, journal.Invalid(name, "%q must be true or false", v))
					return
				}
				*dst = b
			}
		}
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				writeAdminError(w, journal.Invalid("limit", "%q is not a number", s))
				return
			}
			lq.Limit = n
		}
		sts, err := store.List(r.Context(), lq)
		if err != nil {
			writeAdminError(w, err)
			return
		}
		held, err := notUpHosts(r.Context(), store)
		if err != nil {
			writeAdminError(w, err)
			return
		}
		out := make([]registrationView, len(sts))
		for i, s := range sts {
			out[i] = viewHeld(s, held)
		}
		_ = printJSON(w, out)
	})
	mux.HandleFunc("GET /v1/evidence", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("stream") == "" || q.Get("id") == "" {
			writeAdminError(w, journal.Invalid("query", "stream and id are required query parameters (/v1/evidence?stream=…&id=…)"))
			return
		}
		limit := 0 // the store's default
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				writeAdminError(w, journal.Invalid("limit", "%q is not a number", s))
				return
			}
			limit = n
		}
		evs, err := store.Evidence(r.Context(), q.Get("stream"), q.Get("id"), limit)
		if err != nil {
			writeAdminError(w, err)
			return
		}
		if evs == nil {
			evs = []push.Evidence{}
		}
		_ = printJSON(w, evs)
	})
	action := func(needsSeq bool, do func(r *http.Request, stream, id string, toSeq uint64) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			stream, id := q.Get("stream"), q.Get("id")
			if stream == "" || id == "" || (needsSeq && q.Get("to_seq") == "") {
				params := "stream and id"
				if needsSeq {
					params = "stream, id and to_seq"
				}
				writeAdminError(w, journal.Invalid("query", "%s are required query parameters (%s?stream=…&id=…)", params, r.URL.Path))
				return
			}
			var toSeq uint64
			if s := q.Get("to_seq"); s != "" {
				n, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					writeAdminError(w, journal.Invalid("to_seq", "%q is not a seq", s))
					return
				}
				toSeq = n
			}
			if err := do(r, stream, id, toSeq); err != nil {
				writeAdminError(w, err)
				return
			}
			st, err := store.Get(r.Context(), stream, id)
			if err != nil {
				writeAdminError(w, err)
				return
			}
			_ = printJSON(w, viewOf(st))
		}
	}
	mux.HandleFunc("POST /v1/unpark", action(false, func(r *http.Request, stream, id string, _ uint64) error {
		return store.Unpark(r.Context(), stream, id, now())
	}))
	mux.HandleFunc("POST /v1/skip", action(true, func(r *http.Request, stream, id string, toSeq uint64) error {
		reason := r.URL.Query().Get("reason")
		if reason == "" {
			reason = "skipped by an operator (admin API)"
		}
		return store.Skip(r.Context(), stream, id, toSeq, now(), reason)
	}))
	mux.HandleFunc("POST /v1/rewind", action(true, func(r *http.Request, stream, id string, toSeq uint64) error {
		return store.Rewind(r.Context(), stream, id, toSeq, now())
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="herald admin"`)
				w.WriteHeader(http.StatusUnauthorized)
				_ = printJSON(w, map[string]string{"error": "a valid bearer token (HERALD_ADMIN_TOKEN) is required"})
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

// adminStore is what the admin API works on.
type adminStore interface {
	push.Store
	push.HostStore
}

// notRouted answers, as JSON like every other error, a request no route
// serves: 405 with Allow when the path is served for other methods, else 404.
func notRouted(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		w.WriteHeader(http.StatusMethodNotAllowed)
		_ = printJSON(w, map[string]string{"error": fmt.Sprintf("%s %s is not served: use %s", r.Method, r.URL.Path, strings.Join(allow, " or "))})
		return
	}
	w.WriteHeader(http.StatusNotFound)
	_ = printJSON(w, map[string]string{"error": fmt.Sprintf("no such endpoint: %s (the admin API is under /v1/)", r.URL.Path)})
}

func writeAdminError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, journal.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, journal.ErrNotFound):
		code = http.StatusNotFound
	}
	w.WriteHeader(code)
	_ = printJSON(w, map[string]string{"error": err.Error()})
}

// checkAdminAddr refuses to serve the admin API on a non-loopback address
// without a token.
func checkAdminAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--admin-addr %q: %v", addr, err)
	}
	if token != "" {
		return nil
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return usagef("--admin-addr %s is not a loopback address: set HERALD_ADMIN_TOKEN to serve the admin API there (refusing to start it unauthenticated)", addr)
}
