package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heraldpush/herald/push"
)

// MaxLocationBytes bounds the Location kept in an Outcome: a receiver's
// header must not bloat evidence. A longer one is cut.
const MaxLocationBytes = 2048

// Classify turns an HTTP answer into an Outcome (the table in the package
// doc; status codes per RFC 9110 §15):
//
//	2xx                                     Accepted
//	410 Gone                                Permanent (park: the receiver is gone)
//	3xx                                     Transient, never followed; Location kept
//	429, 503, or any other answer with a
//	valid Retry-After (RFC 9110 §10.2.3)    Transient, at the receiver's time
//	408, 425, 5xx                           Transient
//	other 4xx                               Rejected (the registration's RejectPolicy decides)
//	anything else (1xx, 6xx…)               Transient
//
// A 502, 503 or 504 without a valid Retry-After is also HostLevel: a gateway
// (or the host's own front) saying the host is not there, nothing about the
// record; with a Retry-After it is an answer about this request, as v1.
//
// A Retry-After on a 2xx or a 410 is ignored: the verdict does not depend
// on time. A Retry-After that does not parse is ignored (see
// ParseRetryAfter); an HTTP-date is converted against at. Only the first
// Retry-After and Location field lines are read. Reason is empty for
// Accepted and names the status otherwise ("503 Service Unavailable;
// Retry-After 2m0s"). Body and Duration are left for the caller.
func Classify(status int, header http.Header, at time.Time) push.Outcome {
	out := push.Outcome{Status: status}
	switch {
	case status >= 200 && status <= 299:
		out.Verdict = push.Accepted
		return out
	case status == http.StatusGone:
		out.Verdict = push.Permanent
		out.Reason = statusText(status) + ": the receiver says it is gone"
		return out
	}
	out.RetryAfter, out.HasRetryAfter = ParseRetryAfter(header.Get("Retry-After"), at)
	out.Reason = statusText(status)
	switch {
	case status >= 300 && status <= 399:
		out.Verdict = push.Transient
		out.Location = cut(header.Get("Location"), MaxLocationBytes)
		out.Reason += ": redirect not followed"
		if h := locationHost(out.Location); h != "" {
			out.Reason += " (to " + h + ")"
		}
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly,
		status == http.StatusTooManyRequests, status >= 500 && status <= 599:
		out.Verdict = push.Transient
	case status >= 400 && status <= 499:
		out.Verdict = push.Rejected
		if out.HasRetryAfter {
			out.Verdict = push.Transient
		}
	default:
		out.Verdict = push.Transient
		out.Reason += ": not a final HTTP status"
	}
	if out.HasRetryAfter {
		out.Reason += "; Retry-After " + out.RetryAfter.String()
	}
	switch status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		out.HostLevel = !out.HasRetryAfter
	}
	return out
}

func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return strconv.Itoa(status) + " " + t
	}
	return "status " + strconv.Itoa(status)
}

// locationHost is the host of an absolute Location, or "".
func locationHost(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return ""
	}
	return u.Host
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Where a request was when it failed, for the words of a timeout.
const (
	stageConnecting int32 = iota // dialing, TLS
	stageSending                 // connected, writing the request
	stageWaiting                 // request written, awaiting the response headers
)

var stageWords = [...]string{
	stageConnecting: "while connecting",
	stageSending:    "while sending the request",
	stageWaiting:    "waiting for the response headers",
}

// classifyError classifies a request that got no answer. A refusal of the
// network guard is Permanent; everything else (timeouts, DNS failures,
// refused or reset connections, TLS failures) is Transient and HostLevel. The reason
// comes from the innermost useful error, never from *url.Error, whose
// message repeats the whole URL.
func classifyError(err error, timedOut bool, timeout time.Duration, stage int32) push.Outcome {
	var refused *RefusedError
	if errors.As(err, &refused) {
		return push.Outcome{Verdict: push.Permanent, Reason: refused.Error()}
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	words := stageWords[stageConnecting]
	if stage >= 0 && int(stage) < len(stageWords) {
		words = stageWords[stage]
	}
	var netErr net.Error
	var reason string
	switch {
	case timedOut || errors.Is(err, context.DeadlineExceeded):
		reason = fmt.Sprintf("timeout: no answer within %v (%s)", timeout, words)
	case errors.As(err, new(*resolveError)):
		reason = err.Error()
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		reason = "connection closed by the receiver " + words
	case errors.As(err, &netErr) && netErr.Timeout():
		reason = "timeout " + words + ": " + err.Error()
	default:
		reason = err.Error()
	}
	return push.Outcome{Verdict: push.Transient, Reason: reason, HostLevel: true}
}
