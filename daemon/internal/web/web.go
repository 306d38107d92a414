// Package web holds what the daemon's HTTP APIs and its page share: the
// status an error answers with, and the loopback check that guards an open
// API.
package web

import (
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
)

// HTTPError is an error answered with a status of its own (413, 415).
type HTTPError struct {
	Code int
	Msg  string
}

// HTTPStatus is err's status on the APIs and the page: an HTTPError's own,
// 400 bad input, 401 no valid token, 403 a token that may not, 404 nothing
// there, 409 a conflict or a sealed stream, else 500.
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
	case errors.Is(err, operator.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, operator.ErrBadToken):
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

func (e HTTPError) Error() string { return e.Msg }
