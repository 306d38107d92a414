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

// MaxLocationBytes bounds the Location kept in an Outcome; a longer one is
// cut.
const MaxLocationBytes = 2048

// Classify turns an HTTP answer into an Outcome by the package doc's table;
// any other status (1xx, 6xx…) is Transient. Only
// the first Retry-After and Location field lines are read. Reason is empty
// for Accepted and names the status otherwise ("503 Service Unavailable;
// Retry-After 2m0s"). Body and Duration are left to the caller.
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
	out.Verdict = push.Transient
	switch {
	case status >= 300 && status <= 399:
		out.Location = cut(header.Get("Location"), MaxLocationBytes)
		out.Reason += ": redirect not followed"
		if h := locationHost(out.Location); h != "" {
			out.Reason += " (to " + h + ")"
		}
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly,
		status == http.StatusTooManyRequests, status >= 500 && status <= 599:
	case status >= 400 && status <= 499:
		if !out.HasRetryAfter {
			out.Verdict = push.Rejected
		}
	default:
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

// classifyError classifies a request that got no answer: a guard refusal
// is Permanent, anything else Transient and HostLevel. The reason comes
// from the innermost useful error, never *url.Error, which repeats the URL.
func classifyError(err error, timedOut bool, timeout time.Duration, stage int32) push.Outcome {
	if refused, ok := errors.AsType[*RefusedError](err); ok {
		return push.Outcome{Verdict: push.Permanent, Reason: refused.Error()}
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	words := stageWords[stage]
	var reason string
	switch netErr, isNet := errors.AsType[net.Error](err); {
	case timedOut || errors.Is(err, context.DeadlineExceeded):
		reason = fmt.Sprintf("timeout: no answer within %v (%s)", timeout, words)
	case errors.As(err, new(*resolveError)):
		reason = err.Error()
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		reason = "connection closed by the receiver " + words
	case isNet && netErr.Timeout():
		reason = "timeout " + words + ": " + err.Error()
	default:
		reason = err.Error()
	}
	return push.Outcome{Verdict: push.Transient, Reason: reason, HostLevel: true}
}
