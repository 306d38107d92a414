package push

import (
	"github.com/heraldpush/herald/push/wire"
	"github.com/heraldpush/herald/store"
)

// The types a projection and a transport implement or exchange, and those a
// worker reports with, are package wire's (each is documented there), which
// the worker's engine shares; push names them too, so that a program, a
// projection or a transport needs only push.
type (
	// Projection turns one record into the messages of one registration
	// (wire.Projection).
	Projection = wire.Projection
	// Message is what goes on the wire: one POST (wire.Message).
	Message = wire.Message
	// Signer signs a request at send time (wire.Signer).
	Signer = wire.Signer
	// SignerFunc adapts a function to Signer (wire.SignerFunc).
	SignerFunc = wire.SignerFunc
	// Transport sends one message and classifies the answer (wire.Transport).
	Transport = wire.Transport
	// TransportFunc adapts a function to Transport (wire.TransportFunc).
	TransportFunc = wire.TransportFunc
	// Outcome is the classified answer to one attempt (wire.Outcome).
	Outcome = wire.Outcome
	// Verdict classifies an answer (wire.Verdict).
	Verdict = wire.Verdict
	// Attempt describes one delivery attempt, for Hooks.Attempt (wire.Attempt).
	Attempt = wire.Attempt
	// Hooks observe a worker (wire.Hooks).
	Hooks = wire.Hooks
	// SweepReport counts what one RunOnce, or one turn, did (wire.SweepReport).
	SweepReport = wire.SweepReport
)

// The verdicts (wire.Accepted…).
const (
	Accepted  = wire.Accepted  // a 2xx
	Transient = wire.Transient // retry, parking at the ceiling
	Permanent = wire.Permanent // park now
	Rejected  = wire.Rejected  // any other 4xx: the RejectPolicy decides
)

// Span names and attribute keys of a worker's traces (wire.SpanSweep…).
const (
	SpanSweep     = wire.SpanSweep
	SpanTurn      = wire.SpanTurn
	SpanDelivery  = wire.SpanDelivery
	AttrNamespace = wire.AttrNamespace
	AttrHost      = wire.AttrHost
	AttrStatus    = wire.AttrStatus
	AttrAttempt   = wire.AttrAttempt
	AttrOutcome   = wire.AttrOutcome
	AttrRecords   = wire.AttrRecords
	AttrStream    = wire.AttrStream
	AttrReg       = wire.AttrReg
	AttrClaimed   = wire.AttrClaimed
	AttrSaturated = wire.AttrSaturated
)

// ConfigValidator is a projection that checks a registration's config before
// Worker.Register stores it. Errors wrap journal.ErrInvalid and name the bad
// field, never its secret value.
type ConfigValidator interface {
	ValidateConfig(reg store.Registration) error
}
