package operator

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/heraldpush/herald/journal"
)

// Field is the name the APIs give a library's field of a registration:
// push's on_rejected is on_4xx, a new registration's next seq is from_seq,
// any other is its own. The CLI's flag is Field's name in kebab case
// (--on-4xx, --from-seq).
func Field(name string) string {
	if f, ok := fields[name]; ok {
		return f
	}
	return name
}

var fields = map[string]string{"on_rejected": "on_4xx", "next seq": "from_seq"}

// HTTPError is an error answered with a status of its own (413, 415).
type HTTPError struct {
	Code int
	Msg  string
}

func (e HTTPError) Error() string { return e.Msg }

// HTTPStatus is err's status on the APIs and the page: an HTTPError's own,
// 400 bad input, 404 nothing there, 409 a conflict or a sealed stream, else
// 500.
func HTTPStatus(err error) int {
	switch he, ok := errors.AsType[HTTPError](err); {
	case ok:
		return he.Code
	case errors.Is(err, journal.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, journal.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, journal.ErrConflict), errors.Is(err, journal.ErrSealed):
		return http.StatusConflict
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrBadToken):
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// LoopbackHost reports whether a request's Host, port or not, names a
// loopback address (127.0.0.0/8, ::1 with any zone, localhost) or is empty
// (HTTP/1.0): all an API or page open without a token answers, against DNS
// rebinding.
func LoopbackHost(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	host, _, _ = strings.Cut(host, "%")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckAddr refuses to serve an API on addr (host:port; empty: off)
// without a token unless it is a loopback address (LoopbackHost; an empty
// host is every interface). Its error names field, the option, and envVar,
// the variable that sets the token.
func CheckAddr(field, addr, token, envVar string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %v", field, addr, err)
	}
	if token != "" || host != "" && LoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("%s %s is not a loopback address: set %s to serve it there (refusing to start it unauthenticated)", field, addr, envVar)
}
