package wire

// Span names and attribute keys (README, "One trace from the append to the
// receiver"): a span per RunOnce, per turn (a root under Run) and per
// delivery attempt. Attributes never hold a secret, header, body or URL path.
const (
	SpanSweep    = "herald.sweep"
	SpanTurn     = "herald.turn"
	SpanDelivery = "herald.delivery"

	AttrNamespace = "herald.namespace"
	AttrHost      = "server.address" // HostOf form, "example.com:443"
	AttrStatus    = "http.response.status_code"
	AttrAttempt   = "herald.attempt" // 1-based attempt at the record
	AttrOutcome   = "herald.outcome" // delivery: accepted, transient, permanent, rejected; turn: ok, error
	AttrRecords   = "herald.records" // records a turn acknowledged
	AttrStream    = "herald.stream"  // the registration's stream
	AttrReg       = "herald.registration"
	AttrClaimed   = "herald.registrations" // sweep: registrations claimed
	AttrSaturated = "herald.saturated"     // sweep: more were due than its limit
)
