package daemon

import (
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldpush/herald/daemon/internal/throttle"
	"github.com/heraldpush/herald/daemon/internal/web"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// writeJSON writes v as indented JSON and a newline, with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// errorBody is every error answer: {"error": "..."}, JSON-escaped.
type errorBody struct {
	Error string `json:"error"`
}

func refuse(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, errorBody{fmt.Sprintf(format, args...)})
}

// endpoint is what a route of either API does: its answer, with 200 (or
// the status a withStatus gives), or an error, with web.HTTPStatus's.
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
		writeJSON(w, web.HTTPStatus(err), errorBody{err.Error()})
	case ok && s.v == nil:
		w.WriteHeader(s.code)
	case ok:
		writeJSON(w, s.code, s.v)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

// gate is who an API lets in: whether it is open (no static token, on
// loopback: the rules of an open API for a request without an
// Authorization header), the tokens it knows (auth), the throttle of
// failed attempts (nil: none), and whether the client is told by a proxy
// in front (throttle.Client).
type gate struct {
	open        bool
	auth        operator.Authenticator
	throttle    *throttle.Throttle
	behindProxy bool
}

// openToken is who a request to an open API is: an admin, as anyone who
// can reach a loopback address of the host.
var openToken = store.Token{ID: "open", Name: "an open API (no static token)", Role: store.RoleAdmin}

// guard wraps mux with bearer authentication (a static token, or a stored
// one), or, when g is open and the request has no Authorization header,
// the rules of an open API (package doc); lets the token through to the
// routes operator.Access allows it, carrying it in the request's context;
// and answers what no route serves with notRouted. A client past its
// failed attempts gets 429 with Retry-After, whatever it sends.
func guard(mux *http.ServeMux, g gate, realm, envVar string) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, header := r.Header["Authorization"]
		open := g.open && !header
		tok := openToken
		switch {
		case open && !web.LoopbackHost(r.Host):
			refuse(w, http.StatusForbidden, "without %s this API answers only requests to a loopback address, not to %q", envVar, r.Host)
			return
		case open && cop.Check(r) != nil:
			refuse(w, http.StatusForbidden, "refused: a browser sent this %s from a page of another origin (its Sec-Fetch-Site or Origin header says so), "+
				"which this API, open without %s, does not take; a program's request carries no Origin header, or set %s and send its token", r.Method, envVar, envVar)
			return
		case !open:
			client := throttle.Client(r, g.behindProxy)
			if g.throttle != nil {
				if wait := g.throttle.Wait(client, realm); wait > 0 {
					w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
					refuse(w, http.StatusTooManyRequests, "too many failed authentications from this address: try again in %v", wait)
					return
				}
			}
			secret, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			t, err := g.auth.Authenticate(r.Context(), secret)
			if errors.Is(err, operator.ErrBadToken) {
				if g.throttle != nil {
					g.throttle.Failed(client, realm)
				}
				unauthorized(w, realm, envVar)
				return
			} else if err != nil {
				// The store's error names the database: for the log only.
				if g.auth.Log != nil {
					g.auth.Log.Error("herald: cannot check a token", "to", realm, "err", err)
				}
				refuse(w, http.StatusServiceUnavailable, "the token cannot be checked now: the store does not answer (the daemon's log says why)")
				return
			}
			tok = t
		}
		_, pattern := mux.Handler(r)
		if pattern == "" {
			notRouted(w, r, mux, realm)
			return
		}
		if err := operator.Allowed(tok, pattern); err != nil {
			refuse(w, http.StatusForbidden, "%v", err)
			return
		}
		mux.ServeHTTP(w, r.WithContext(operator.WithToken(r.Context(), tok)))
	})
}

// scope is s as the request's token sees it (operator.Scoped).
func scope(r *http.Request, s store.Backend) store.Backend {
	return operator.Scoped(s, operator.TokenOf(r.Context()))
}

func unauthorized(w http.ResponseWriter, realm, envVar string) {
	w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", realm))
	refuse(w, http.StatusUnauthorized, "a valid bearer token (%s, or one made by herald tokens create) is required", envVar)
}

// bearer reports whether r carries token as "Authorization: Bearer …",
// compared in constant time.
func bearer(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// elsewhere names, by guard's realm, the address that serves the routes of
// operator.Access that a realm's mux does not.
var elsewhere = map[string]string{
	"herald api":     "the admin address (herald run --admin-addr)",
	"herald admin":   "the API address (herald run --api-addr)",
	"herald metrics": "the admin or API address",
}

// notRouted answers a request no route serves: 405 with Allow when the path
// is served for other methods, else 404, naming the address that serves it
// when the other one does.
func notRouted(w http.ResponseWriter, r *http.Request, mux *http.ServeMux, realm string) {
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
		refuse(w, http.StatusMethodNotAllowed, "%s %s is not served: use %s", journal.Shown(r.Method), r.URL.Path, strings.Join(allow, " or "))
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		// The admin address and the API address serve different routes.
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			if _, ok := operator.Access[m+" "+r.URL.Path]; ok && elsewhere[realm] != "" {
				refuse(w, http.StatusNotFound, "%s is served on %s, not on this one", r.URL.Path, elsewhere[realm])
				return
			}
		}
		refuse(w, http.StatusNotFound, "no such endpoint at this address: %s (README, \"The command and the operator's guide\", lists the admin address's routes; GET /v1/openapi.json the API address's)", journal.Shown(r.URL.Path))
		return
	}
	refuse(w, http.StatusNotFound, "no such endpoint: %s (herald's APIs are under /v1/)", journal.Shown(r.URL.Path))
}

// strictQuery reads r's query parameters, each one of allowed, as the
// package doc says; hint says where another parameter belongs. Errors wrap
// journal.ErrInvalid.
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
			return nil, journal.Invalid(journal.Shown(name), "is not a parameter of %s, which takes %s (%s)", r.URL.Path, strings.Join(allowed, ", "), hint)
		case len(vs) > 1:
			return nil, journal.Invalid(name, "is given %d times; give it once", len(vs))
		case vs[0] == "": // ?stream= would filter nothing, and list everything
			return nil, journal.Invalid(name, "is empty: give it a value or leave it out")
		}
	}
	return q, nil
}

// boolParam reads an optional boolean query parameter: true or false, as
// the OpenAPI document's booleans; absent is false.
func boolParam(q url.Values, name string) (bool, error) {
	switch v := q.Get(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, journal.Invalid(name, "%q must be true or false", v)
	}
}

// limitParam reads a list's optional limit parameter, 1 to
// store.MaxListLimit; absent is 0, the store's default.
func limitParam(q url.Values) (int, error) {
	s := q.Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, journal.Invalid("limit", "%q is not a number", s)
	}
	if _, err := store.ListLimit(n); err != nil || n == 0 {
		return 0, journal.Invalid("limit", "is %d: it must be from 1 to %d (leave it out for the default)", n, store.MaxListLimit)
	}
	return n, nil
}

// readsAByte reports whether a body without Content-Length holds a byte.
func readsAByte(body io.Reader) bool {
	var b [1]byte
	n, _ := body.Read(b[:])
	return n > 0
}

// decodeBody reads a JSON request body into v, strictly (no unknown
// fields, nothing after the value). Errors: 415 for another Content-Type,
// 413 past the body's limit (APIHandler), else journal.ErrInvalid.
func decodeBody(r *http.Request, v any) error {
	if r.URL.RawQuery != "" {
		// ?stream=… would be dropped, and the body's stream used.
		return journal.Invalid("query", "%s takes no query parameters: its input is the JSON body", r.URL.Path)
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return web.HTTPError{Code: http.StatusUnsupportedMediaType, Msg: fmt.Sprintf("Content-Type %q is not served: send application/json", ct)}
	}
	err := operator.DecodeJSON(r.Body, v)
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return web.HTTPError{Code: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("the request body is over the limit of %d bytes", mbe.Limit)}
	} else if err != nil {
		return operator.JSONError("body", err)
	}
	return nil
}

// keyed is an endpoint on the registration its query names: stream and
// id, both required and well formed, in a strictQuery that may hold the
// route's other parameters, required and optional, which do reads from q.
func keyed(required, optional []string, do func(r *http.Request, k store.Key, q url.Values) (any, error)) endpoint {
	return func(r *http.Request) (any, error) {
		names := append([]string{"stream", "id"}, required...)
		q, err := strictQuery(r, "a registration is named by ?stream=…&id=…", append(names, optional...)...)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if q.Get(name) == "" {
				return nil, journal.Invalid("query", "%s and %s are required query parameters (%s?%s=…)",
					strings.Join(names[:len(names)-1], ", "), names[len(names)-1], r.URL.Path, strings.Join(names, "=…&"))
			}
		}
		k := store.Key{Stream: q.Get("stream"), ID: q.Get("id")}
		if err := cmp.Or(journal.ValidateStream(k.Stream), journal.ValidateID("id", k.ID)); err != nil {
			return nil, err
		}
		return do(r, k, q)
	}
}

// CheckAddr refuses to serve an API on addr (host:port; empty: off)
// without a token unless it is a loopback address (web.LoopbackHost; an empty
// host is every interface). Its error names field, the option, and envVar,
// the variable that sets the token.
func CheckAddr(field, addr, token, envVar string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if ae := (*net.AddrError)(nil); errors.As(err, &ae) {
		return fmt.Errorf("%s %s: %s", field, journal.Quoted(addr), ae.Err) // ae.Error() repeats addr
	} else if err != nil {
		return fmt.Errorf("%s %s: %v", field, journal.Quoted(addr), err)
	}
	if token != "" || host != "" && web.LoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("%s %s is not a loopback address: set %s to serve it there (refusing to start it unauthenticated)", field, journal.Shown(addr), envVar)
}
