package wire

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldpush/herald/store"
)

// Transport sends one message and classifies the answer.
type Transport interface {
	// Deliver POSTs msg to reg.URL, signed at `at`, and classifies the
	// answer. A receiver's failure is an Outcome; an error means the attempt
	// says nothing about the receiver (ctx ended) and counts no attempt.
	Deliver(ctx context.Context, reg store.Registration, msg Message, at time.Time) (Outcome, error)
}

// Verdict classifies an answer (the table in the transport package doc and
// in README, "Delivery semantics").
type Verdict int

const (
	Accepted  Verdict = iota + 1 // a 2xx
	Transient                    // 408, 425, 429, 5xx, 3xx, no connection, a timeout: retry, parking at the ceiling
	Permanent                    // 410 Gone, or a URL the network guard refuses: park now
	Rejected                     // any other 4xx: the RejectPolicy decides
)

func (v Verdict) String() string {
	switch v {
	case Accepted:
		return "accepted"
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	case Rejected:
		return "rejected"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Outcome is the classified answer to one attempt.
type Outcome struct {
	Verdict Verdict
	Status  int // HTTP status code; 0 when no answer came back
	// RetryAfter is the receiver's Retry-After (RFC 9110 §10.2.3; a date
	// converted against `at`), if HasRetryAfter.
	RetryAfter    time.Duration
	HasRetryAfter bool
	Location      string        // the Location of a 3xx, which is never followed
	Body          []byte        // the first MaxEvidenceBody bytes of a failed answer (none for Accepted: a success leaves no evidence)
	Duration      time.Duration // wall time of the attempt, for evidence and metrics
	Reason        string        // why it failed, in words ("503 Service Unavailable", "dial: connection refused", "netguard: 10.0.0.7 is private (RFC 1918)"); never a secret
	// HostLevel marks a failure that says nothing about the record (no
	// connection, a timeout, TLS, a reset before any answer, 502/503/504
	// without Retry-After), charged to the host (HostStore); never one of
	// the registration's own route or credentials (its proxy, its refused
	// client certificate).
	HostLevel bool
	// Answered marks an answer begun without a valid status (not HTTP, or
	// cut short): the host answered all the same.
	Answered bool
}

// HostAnswered reports whether the host itself answered (a status that is not
// HostLevel, or Answered), which brings a down host up.
func (o Outcome) HostAnswered() bool { return (o.Status != 0 || o.Answered) && !o.HostLevel }

// OK reports whether the message was accepted.
func (o Outcome) OK() bool { return o.Verdict == Accepted }

// TransportFunc adapts a function to Transport (tests, dry runs, examples).
type TransportFunc func(ctx context.Context, reg store.Registration, msg Message, at time.Time) (Outcome, error)

// Deliver calls f.
func (f TransportFunc) Deliver(ctx context.Context, reg store.Registration, msg Message, at time.Time) (Outcome, error) {
	return f(ctx, reg, msg, at)
}
