package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// MaxLocationBytes bounds the Location kept in an Outcome, as evidence keeps
// it (store.MaxEvidenceLocation); a longer one is cut.
const MaxLocationBytes = store.MaxEvidenceLocation

// Classify turns an HTTP answer into an Outcome by the package doc's table
// (1xx and 6xx are Transient), with a Reason naming the status unless
// Accepted ("503 Service Unavailable; Retry-After 2m0s"). Body and Duration
// are left to the caller.
func Classify(status int, header http.Header, at time.Time) push.Outcome {
	switch {
	case status >= 200 && status <= 299:
		return push.Outcome{Status: status, Verdict: push.Accepted}
	case status == http.StatusGone:
		return push.Outcome{Status: status, Verdict: push.Permanent, Reason: statusText(status) + ": the receiver says it is gone"}
	}
	out := push.Outcome{Status: status, Verdict: push.Transient, Reason: statusText(status)}
	out.RetryAfter, out.HasRetryAfter = ParseRetryAfter(header.Get("Retry-After"), at)
	switch {
	case status >= 300 && status <= 399:
		loc := header.Get("Location")
		out.Location = loc[:min(len(loc), MaxLocationBytes)]
		out.Reason += ": redirect not followed"
		if u, err := url.Parse(out.Location); err == nil && u.Host != "" {
			out.Reason += " (to " + u.Host + ")"
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
	out.HostLevel = status >= http.StatusBadGateway && status <= http.StatusGatewayTimeout && !out.HasRetryAfter // 502, 503, 504
	return out
}

func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return strconv.Itoa(status) + " " + t
	}
	return "status " + strconv.Itoa(status)
}

// Where a request was when it failed, as attempt's httptrace hooks follow it.
const (
	stagePreparing  int32 = iota // not yet asking for a connection: a failure is herald's own
	stageConnecting              // dialing, TLS
	stageSending                 // connected, writing the request
	stageWaiting                 // request written, awaiting the response headers
	stageAnswering               // a first byte of the answer came back: the host answered
)

var stageWords = [...]string{
	stagePreparing:  "before connecting",
	stageConnecting: "while connecting",
	stageSending:    "while sending the request",
	stageWaiting:    "waiting for the response headers",
	stageAnswering:  "in the middle of its answer",
}

// classifyError classifies a request that got no answer (package doc's
// table), its reason from the innermost useful error, never *url.Error,
// which repeats the URL. The failure is the host's (HostLevel) unless it is
// the registration's own: the receiver began an answer that is not valid
// HTTP (bytes came back: the host answered, as with a 5xx), it refused the
// client certificate, or proxied (the request went through the
// registration's own proxy) and the host's name resolved: its proxy can
// fail, stall or reset in the host's place, and other registrations may
// reach the host without it.
func classifyError(err error, timedOut bool, timeout time.Duration, stage int32, proxied bool) push.Outcome {
	if refused, ok := errors.AsType[*RefusedError](err); ok {
		return push.Outcome{Verdict: push.Permanent, Reason: refused.Error()}
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	if stage == stagePreparing && !timedOut {
		return push.Outcome{Verdict: push.Transient, Reason: "request not sent: " + err.Error()}
	}
	words, reason := stageWords[stage], err.Error()
	dns := errors.As(err, new(*resolveError))
	alert, certRefused := certificateRefused(err)
	own := proxied && !dns
	var stream http2.StreamError // net/http's own converts to it (errors.As)
	switch netErr, isNet := errors.AsType[net.Error](err); {
	case timedOut || errors.Is(err, context.DeadlineExceeded):
		reason = fmt.Sprintf("timeout: no answer within %v (%s)", timeout, words)
	case errors.As(err, &stream):
		return streamFailed(stream, words)
	case dns: // "dns: …", even when the lookup itself timed out (not the request)
	case certRefused:
		reason, own = "client certificate refused by the receiver: "+alert, true
	case stage == stageAnswering && !(isNet && netErr.Timeout()):
		return push.Outcome{Verdict: push.Transient, Reason: answerFailed(err), Answered: true}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		reason = "connection closed by the receiver " + words
	case isNet && netErr.Timeout():
		reason = "timeout " + words + ": " + reason
	}
	if own && !certRefused && !strings.HasPrefix(reason, "proxy ") { // the proxy's own errors name it
		reason = "through the registration's proxy: " + reason
	}
	return push.Outcome{Verdict: push.Transient, Reason: reason, HostLevel: !own}
}

// streamFailed classifies an HTTP/2 stream error: one request failed on a
// connection that still serves the others. The receiver reset the stream
// or sent frames on it that are no valid answer: it answered, and what is
// wrong is the registration's, as a 5xx is. REFUSED_STREAM apart: the
// receiver did not process the request (RFC 9113 §8.7), an overload, as a
// 503 says; net/http retries it within the attempt first.
func streamFailed(se http2.StreamError, words string) push.Outcome {
	switch {
	case se.Code == http2.ErrCodeRefusedStream:
		return push.Outcome{Verdict: push.Transient, Reason: "request refused by the receiver (HTTP/2 REFUSED_STREAM) " + words, HostLevel: true}
	case se.Cause == nil: // herald reset it, for a frame that broke the protocol (a flow-control window overrun)
		return push.Outcome{Verdict: push.Transient, Reason: "answer not valid HTTP/2: " + se.Code.String(), Answered: true}
	case se.Cause.Error() == "received from peer": // net/http's cause of an RST_STREAM
		return push.Outcome{Verdict: push.Transient, Reason: "stream reset by the receiver (HTTP/2 " + se.Code.String() + ") " + words, Answered: true}
	}
	return push.Outcome{Verdict: push.Transient, Reason: "answer not valid HTTP/2: " + se.Cause.Error(), Answered: true}
}

// answerFailed says how an answer that began went wrong: cut short, or not
// HTTP, showing what the receiver sent (requote cuts it).
func answerFailed(err error) string {
	closed := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	_, broken := errors.AsType[*net.OpError](err) // a reset
	for inner := errors.Unwrap(err); inner != nil; inner = errors.Unwrap(err) {
		err = inner // the innermost error: net/http's wrappers say nothing of the answer
	}
	switch {
	case closed:
		return "answer cut: connection closed by the receiver " + stageWords[stageAnswering]
	case broken:
		return "answer cut: " + err.Error()
	}
	return "answer not valid HTTP: " + err.Error()
}

// requote shows again each Go-quoted value in msg as journal.Quoted does,
// cut: net/http quotes the receiver's bytes in its errors (%q), whole (a
// header line, a GOAWAY's debug data). Redact first: a secret the cut
// splits would no longer match.
func requote(msg string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			break
		}
		q, err := strconv.QuotedPrefix(msg[i:])
		if err != nil {
			break
		}
		raw, _ := strconv.Unquote(q)
		b.WriteString(msg[:i] + journal.Quoted(raw))
		msg = msg[i+len(q):]
	}
	b.WriteString(msg)
	return b.String()
}

// certificateAlerts are the TLS alerts (RFC 8446 §6.2) by which a server
// refuses the certificate a client presented, or its lack of one: bad,
// unsupported, revoked, expired or unknown certificate, unknown CA, access
// denied, certificate required. A server sends them about the client's
// credentials only, never about its own certificate.
var certificateAlerts = [...]tls.AlertError{42, 43, 44, 45, 46, 48, 49, 116}

// certificateRefused returns the alert ("tls: bad certificate") and true
// when err is the receiver's TLS alert refusing the client's certificate.
// crypto/tls reports a peer's alert as a *net.OpError "remote error" around
// an unexported type whose text is AlertError's.
func certificateRefused(err error) (string, bool) {
	opErr, ok := errors.AsType[*net.OpError](err)
	if !ok || opErr.Op != "remote error" || opErr.Err == nil {
		return "", false
	}
	alert := opErr.Err.Error()
	for _, a := range certificateAlerts {
		if alert == a.Error() {
			return alert, true
		}
	}
	return "", false
}

// RetryAfterCeiling is the largest delay ParseRetryAfter returns: asking
// for more means "not for a long time" (the worker clamps it to its
// push.WithMaxRetryAfter).
const RetryAfterCeiling = 10 * 365 * 24 * time.Hour

// ParseRetryAfter parses a Retry-After field value (RFC 9110 §10.2.3):
// delay-seconds (1*DIGIT) or an HTTP-date (RFC 9110 §5.6.7) in any of its
// three forms:
//
//	IMF-fixdate  Sun, 06 Nov 1994 08:49:37 GMT
//	RFC 850      Sunday, 06-Nov-94 08:49:37 GMT
//	asctime      Sun Nov  6 08:49:37 1994
//
// A date is a delay from at, the caller's instant (never the wall clock);
// an RFC 850 year more than 50 years after at is the latest past year with
// those two digits (§5.6.7). Surrounding spaces and tabs are ignored. A
// valid value gives the delay, from 0 (a date at or before at) to
// RetryAfterCeiling, and true; anything else (negative, fractional, signed,
// several values, another time zone, garbage) 0 and false.
func ParseRetryAfter(value string, at time.Time) (time.Duration, bool) {
	v := strings.Trim(value, " \t")
	if v == "" {
		return 0, false
	}
	if strings.TrimLeft(v, "0123456789") == "" {
		n, err := strconv.ParseInt(v, 10, 64) // digits only: the error is ErrRange
		if err != nil || n > int64(RetryAfterCeiling/time.Second) {
			return RetryAfterCeiling, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, ok := parseHTTPDate(v, at)
	if !ok {
		return 0, false
	}
	return min(max(t.Sub(at), 0), RetryAfterCeiling), true // Sub saturates instead of overflowing
}

const (
	imfFixdate = http.TimeFormat                          // "Mon, 02 Jan 2006 15:04:05 GMT"
	rfc850Date = "Monday, 02-Jan-06 15:04:05 GMT"         // time.RFC850 with GMT required
	asctimeDay = "Mon Jan _2 15:04:05 2006"               // time.ANSIC; asctime is in GMT
	rfc850Year = 50                                       // RFC 9110 §5.6.7's "more than 50 years in the future"
	maxDateLen = len("Wednesday, 09-Sep-09 09:09:09 GMT") // the longest valid HTTP-date
)

// parseHTTPDate parses the three HTTP-date forms. Unlike http.ParseTime it
// requires RFC 850 dates to say GMT (time.RFC850 reads an unknown zone as
// UTC), and it reads two-digit years relative to at (RFC 9110), not in
// Go's fixed 1969–2068 window.
func parseHTTPDate(v string, at time.Time) (time.Time, bool) {
	if len(v) > maxDateLen {
		return time.Time{}, false
	}
	if t, err := time.Parse(imfFixdate, v); err == nil {
		return t, true
	}
	if t, err := time.Parse(asctimeDay, v); err == nil {
		return t, true
	}
	t, err := time.Parse(rfc850Date, v)
	if err != nil {
		return time.Time{}, false
	}
	yy := t.Year() % 100
	ref := at.UTC().Year()
	year := ref - ref%100 + yy
	if year+100 <= ref+rfc850Year {
		year += 100
	}
	if year > ref+rfc850Year {
		year -= 100
	}
	return time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC), true
}
