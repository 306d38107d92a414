package daemon

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
)

// writeJSON writes v as indented JSON and a newline, with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = printJSON(w, v)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// errorBody is every error answer: {"error": "..."}. Values echoed in the
// message are JSON-escaped by the encoder, never written raw.
type errorBody struct {
	Error string `json:"error"`
}

// statusOf maps herald's error sentinels to HTTP statuses, in one place:
// 400 bad input, 404 nothing there, 409 a conflict or a sealed stream,
// 500 anything else (the store's).
func statusOf(err error) int {
	switch {
	case errors.Is(err, journal.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, journal.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, journal.ErrConflict), errors.Is(err, journal.ErrSealed):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, statusOf(err), errorBody{err.Error()})
}

// answer writes v with 200, or err.
func answer(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// guard wraps mux: bearer authentication when token is set (compared in
// constant time; realm names the API), and JSON 404 and 405 answers for
// requests no route serves. Without a token the API is open, on loopback
// only, so that any program of the machine's user may call it; but not
// any web page that user's browser shows: a request whose Host is not a
// loopback name (a page's own name resolved to loopback, DNS rebinding)
// is refused with 403, and so is a POST or DELETE a browser sends from
// another origin (net/http's CrossOriginProtection: Sec-Fetch-Site, or
// Origin against Host), which a cross-site form or fetch could otherwise
// make without being able to read the answer.
func guard(mux *http.ServeMux, token, realm, envVar string) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case token == "" && !operator.LoopbackHost(r.Host):
			writeJSON(w, http.StatusForbidden, errorBody{fmt.Sprintf("without %s this API answers only requests to a loopback address, not to %q", envVar, r.Host)})
			return
		case token == "" && cop.Check(r) != nil:
			writeJSON(w, http.StatusForbidden, errorBody{fmt.Sprintf("refused: a browser sent this %s from a page of another origin (its Sec-Fetch-Site or Origin header says so), "+
				"which this API, open without %s, does not take; a program's request carries no Origin header, or set %s and send its token", r.Method, envVar, envVar)})
			return
		case token != "":
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", realm))
				writeJSON(w, http.StatusUnauthorized, errorBody{fmt.Sprintf("a valid bearer token (%s) is required", envVar)})
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

// notRouted answers, as JSON like every other error, a request no route
// serves: 405 with Allow when the path is served for other methods, else 404.
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
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{fmt.Sprintf("%s %s is not served: use %s", r.Method, r.URL.Path, strings.Join(allow, " or "))})
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		// The admin address and the API address serve different routes.
		writeJSON(w, http.StatusNotFound, errorBody{fmt.Sprintf("no such endpoint at this address: %s (herald run --help lists the routes of the admin and the API address)", r.URL.Path)})
		return
	}
	writeJSON(w, http.StatusNotFound, errorBody{fmt.Sprintf("no such endpoint: %s (herald's APIs are under /v1/)", r.URL.Path)})
}
