package push

import (
	"context"
	"fmt"
	"time"
)

// Transport sends one message and classifies the answer.
type Transport interface {
	// Deliver POSTs msg to reg.URL, signing it with msg.Signer at `at`, and
	// classifies the answer as an Outcome. A receiver's failure (an error
	// status, a refused connection, a timeout, a URL the network guard
	// refuses) is an Outcome, not an error. Deliver returns a non-nil error
	// only when the attempt says nothing about the receiver: ctx ended (the
	// worker is shutting down). The worker then ends the registration's turn
	// without counting an attempt.
	Deliver(ctx context.Context, reg Registration, msg Message, at time.Time) (Outcome, error)
}

// Verdict classifies an answer (the table in the transport package doc and
// in README, "Delivery semantics").
type Verdict int

const (
	// Accepted: a 2xx. The message is delivered.
	Accepted Verdict = iota + 1
	// Transient: 408, 425, 429, 5xx, timeouts, refused or reset connections,
	// DNS failures, 3xx: back off and retry, parking at the ceiling (but
	// see Outcome.HostLevel: those are charged to the host, never parked).
	Transient
	// Permanent: 410 Gone, or a URL the network guard refuses: park now.
	Permanent
	// Rejected: any other 4xx. The registration's RejectPolicy decides:
	// retry (as Transient) or skip (evidence, then move on).
	Rejected
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
	// RetryAfter is the receiver's requested delay (Retry-After, RFC 9110
	// §10.2.3, an HTTP-date already converted against `at`), valid when
	// HasRetryAfter. The worker clamps it to [1 s, MaxRetryAfter].
	RetryAfter    time.Duration
	HasRetryAfter bool
	Location      string        // the Location of a 3xx, which is never followed
	Body          []byte        // the first MaxEvidenceBody bytes of a failed answer (none for Accepted: a success leaves no evidence)
	Duration      time.Duration // wall time of the attempt, for evidence and metrics
	Reason        string        // why it failed, in words ("503 Service Unavailable", "dial: connection refused", "netguard: 10.0.0.7 is private (RFC 1918)"); never a secret
	// HostLevel marks a failure that says nothing about the record: no
	// connection (refused, DNS failure, unreachable), a timeout, a TLS
	// failure, a reset, or a gateway's 502, 503 or 504 without Retry-After.
	// It counts against the host, not the registration (HostStore).
	HostLevel bool
}

// HostAnswered reports whether the host itself answered: an HTTP status
// that is not a host-level failure (a 2xx, a 4xx, a 500, a 503 with
// Retry-After…). Any such answer brings a down host up.
func (o Outcome) HostAnswered() bool { return o.Status != 0 && !o.HostLevel }

// OK reports whether the message was accepted.
func (o Outcome) OK() bool { return o.Verdict == Accepted }

// TransportFunc adapts a function to Transport (tests, dry runs, examples).
type TransportFunc func(ctx context.Context, reg Registration, msg Message, at time.Time) (Outcome, error)

// Deliver calls f.
func (f TransportFunc) Deliver(ctx context.Context, reg Registration, msg Message, at time.Time) (Outcome, error) {
	return f(ctx, reg, msg, at)
}
