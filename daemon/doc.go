// Package daemon is herald's daemon as a library: what `herald run` is,
// for a Go program that wants it in its own process.
//
// New builds a Daemon from Options (validated; errors name the field): a
// push.Worker per projection over one Store, with metrics hooks. Run runs
// every worker's dispatcher (push.Worker.Run), wakes the workers after an
// append (one made through the HTTP API at once; from another process when
// the store can listen: store/postgres, whose sequencer Run also runs and
// whose steps wake the workers directly),
// prunes (Options.Prune), serves the configured addresses, and on ctx's end
// stops gracefully: deliveries in flight finish or time out and every
// cursor is saved. Each handler is also available alone, to mount on a
// server of one's own.
//
// # Endpoints
//
//   - Options.MetricsAddr: /metrics (Prometheus; Daemon.MetricsHandler) and
//     /healthz (Daemon.HealthHandler).
//   - Options.AdminAddr: the admin API (AdminHandler), token
//     Options.AdminToken, and the operator's page under /ui/ (Daemon.Page;
//     package daemon/page, with its own login for the same token); GET /
//     sends there.
//   - Options.APIAddr: the HTTP API (Daemon.APIHandler), token
//     Options.APIToken.
//
// An API without a token is served only on a loopback address (CheckAddr),
// answers only requests whose Host is a loopback name (DNS rebinding), and
// refuses a POST or DELETE a browser sends from another origin (net/http's
// CrossOriginProtection), each with 403: any program of the machine may
// call it, a web page in the operator's browser may not.
// Tokens are bearer tokens ("Authorization: Bearer …"), compared in
// constant time. Every answer of both APIs is JSON; errors are
// {"error": "…"} (400 names the field, 401, 403, 404, 405 with Allow, 409,
// 413, 415, 500).
//
// # The admin API
//
//	GET  /v1/registrations?stream=&namespace=&parked=&lagging=&limit=&after_stream=&after_id=
//	GET  /v1/evidence?stream=S&id=ID&limit=N
//	POST /v1/registration/unpark?stream=S&id=ID
//	POST /v1/registrations/unpark?stream=S&namespace=NS  every parked one (both optional)
//	POST /v1/registration/skip?stream=S&id=ID&to_seq=N&reason=…
//	POST /v1/registration/rewind?stream=S&id=ID&to_seq=N
//	GET  /v1/hosts?state=&host=&after=&limit=
//	POST /v1/hosts/reset?host=HOST
//
// Parameters are query parameters. An action on one registration answers
// it as it is after (operator.RegistrationView; unpark adds was_parked); a
// bulk unpark answers those it unparked, and on a failure part way
// {"error", "unparked"}: those unparked before it stay unparked. An unpark
// wakes the registration's worker.
//
// # The HTTP API
//
// Its contract is the OpenAPI 3.1 document at GET /v1/openapi.json
// (openapi.yaml in this package, checked against the handlers by a test).
//
//	POST   /v1/records                      append to one stream
//	GET    /v1/records/status?id=ID         who acknowledged a record (or ?stream=S&seq=N)
//	POST   /v1/registrations                create, or update where it sends
//	GET    /v1/registrations?stream=&namespace=&parked=&lagging=&limit=&after_stream=&after_id=
//	GET    /v1/registration?stream=S&id=ID  one registration
//	DELETE /v1/registration?stream=S&id=ID  delete it and its evidence (204)
//	POST   /v1/registration/unpark?stream=S&id=ID
//	POST   /v1/registrations/unpark?stream=S&namespace=NS  every parked one (both optional)
//
// POST /v1/records takes {"stream": S, "records": [{"id", "kind",
// "content_type", "payload" | "payload_base64", "final", "traceparent",
// "tracestate"}, …]}, as
// application/json, at most Options.MaxBody bytes (DefaultMaxBody, 8 MiB:
// 413 over it). The append is all or nothing and idempotent
// (journal.Journal.Append): 201 when something was appended, 200 when every
// record already existed with the same content (nothing written). 200 and
// 201 are told apart by a lookup before the append, so two identical
// requests racing may both get 201; neither writes twice. An id stored with
// other content (journal.ErrConflict) and a stream sealed by a final record
// (journal.ErrSealed) are 409: both are a conflict with what is stored, and
// retrying the same request will not succeed. "payload" is any JSON value,
// stored as the bytes sent: a JSON content type (the default,
// application/json) requires it (null for none) and takes no other;
// "payload_base64" carries bytes (RFC 4648 §4, padded) of any other content
// type (absent: no bytes). The answer lists the records without their
// payloads, each with its seq (store/postgres numbers records after the
// commit and answers once they are numbered; seq is 0 only for a record
// pruned before the answer, under a retention of 0).
//
// Trace context: a W3C traceparent request header (with tracestate, several
// of which are one comma-joined list) is the append's trace context, stored
// with each record that names none in its own fields; each delivery of the
// record is sent a child of it (journal/trace.go; README, "One trace from the append to the receiver"). It is
// checked as the journal checks a record's (journal.ValidateTraceparent):
// an invalid or repeated traceparent is a 400 naming "traceparent header".
// It is not content: re-appending an id with other trace context is the same
// record (200) and the stored context is kept, and answered.
//
// POST /v1/registrations takes {"stream", "id", "namespace", "url",
// "on_4xx", "kinds", "window", "from_seq", "config"} (window: 1 to
// push.MaxWindow, default 1; absent on an update sets 1, as herald register
// does), where config is the namespace's
// config object (as herald register builds it, e.g. webhook
// {"secrets": ["whsec_…"], "envelope": true}: projection/webhook's Config,
// the document's WebhookConfig), validated by the namespace's projection; only
// namespaces this daemon serves are accepted. The config is stored and never
// shown: registrations are answered as RegistrationView. A URL the daemon's
// network guard will refuse (transport.HTTP.Refusals: http without
// --allow-http, a private address without --allow-private-network, …) is
// registered all the same, as herald register does, and answered with
// "warnings" naming the flag that lifts each rule, or saying that none
// does (a reserved range: RegisteredView).
//
// POST /v1/registration/unpark answers UnparkView: the registration and
// was_parked, false when it was not parked and nothing changed (as herald
// unpark says). POST /v1/registrations/unpark unparks every parked
// registration, of the stream and the namespace when given, as herald
// unpark --all does, and answers UnparkedAll: those it unparked. It refuses
// (400, nothing unparked) what would unpark more than asked: a query that
// does not parse, a parameter other than stream and namespace (an id), one
// given twice or empty, a body (the filter belongs in the query). GET
// /v1/registrations refuses the same but an empty value (no filter). The
// routes of one registration (GET and DELETE /v1/registration,
// /v1/registration/unpark, and the admin API's evidence, skip and rewind)
// refuse a query that does not parse, a parameter they do not take or one
// given twice, a body, an empty stream, id or to_seq, and a stream or id
// that no registration can have (journal.ValidateStream,
// journal.ValidateID): a 400 naming the parameter, before the store is
// asked. GET /v1/records/status and the admin API's GET /v1/hosts and
// POST /v1/hosts/reset read their parameters the same way; GET
// /v1/registrations also refuses a stream, after_stream, after_id or
// namespace that no registration can have, and after_stream without
// after_id. POST /v1/records and POST /v1/registrations take their input
// in the body and refuse any query (a ?stream=… would go unread).
package daemon
