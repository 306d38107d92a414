// Package daemon is herald's daemon as a library: what `herald run` is, for
// a Go program that wants it in its own process.
//
// New builds a Daemon from Options: a push.Worker per projection over one
// Store. Run runs each worker's dispatcher (push.Worker.Run), wakes them
// after an append (at once for one made through the HTTP API; for another
// process's when the store can listen, as store/postgres, whose sequencer
// Run also runs), prunes (Options.Prune) and serves the configured
// addresses until ctx ends; then deliveries in flight finish or time out
// and every cursor is saved. Each handler may also be mounted alone.
//
// # Endpoints
//
//   - Options.MetricsAddr: /metrics (MetricsHandler; off loopback only
//     to a token that may read every stream) and /healthz (HealthHandler).
//   - Options.AdminAddr: the admin API (AdminHandler) and the operator's
//     page under /ui/ (Page, package daemon/page); GET / sends there.
//   - Options.APIAddr: the HTTP API (APIHandler), whose contract, each
//     route's rules included, is the OpenAPI 3.1 document it serves at
//     GET /v1/openapi.json (openapi.yaml, checked against the handlers by a
//     test).
//
// Both APIs take a bearer token ("Authorization: Bearer …"): a static one
// (CheckToken) or one of the store's, whose role and scope limit it
// (operator.Access, operator.Scoped). README has the rest: "Security" the
// throttling and TLS off loopback, "The command and the operator's guide"
// what an API without a token answers.
// Answers are JSON; errors are {"error": "…"} (400 names the field). A
// route refuses, with a 400 that changes nothing, a query that does not
// parse, a parameter it does not take, given twice or empty, a boolean
// other than true or false, a limit outside 1 to store.MaxListLimit, a body
// where its input is the query, a query where it is the body; and a body
// that operator.DecodeJSON refuses (what encoding/json would replace, drop
// or merge: bytes not UTF-8, a lone surrogate, a key twice, a field's key
// in two cases). A registration's config, data to the body, is refused the
// same way by its own decode (projconfig.Decode), a config key in two
// cases included.
//
// # The admin API
//
// README, "The command and the operator's guide", lists its routes. An
// action on one registration answers it as it is after (unpark adds
// was_parked); a bulk unpark answers those it unparked, and on a failure
// part way {"error", "unparked"}: those stay unparked. The registrations
// list and the unparks are the HTTP API's too.
package daemon
