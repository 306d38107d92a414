// Package demo is `herald demo`: herald's whole job, on this machine, in
// one command and well under a minute.
//
// # The scenario
//
// Run checks that the database is empty, generates the run's credentials
// (a 2048-bit RSA key for the actors, a whsec_ webhook secret, tokens), and
// starts seven receivers on loopback, each a real HTTP server:
//
//	inbox        ActivityPub: verifies the HTTP signature with go-fed/httpsig
//	             and the actor's public key, recomputes the Digest, checks
//	             the Date window and that no bto or bcc arrived
//	cloudevents  sdk-go's own HTTP receiver; checks the bearer token and the
//	             event's id, source, type, subject, time and data
//	a2a          checks Authorization and both notification token headers,
//	             decodes an a2a-go v2 StreamResponse
//	webhook      verifies Standard Webhooks signatures with the reference
//	             library (github.com/standard-webhooks/…/libraries/go)
//	flaky        answers 503 with Retry-After (1 or 2 s) to its first
//	             FlakyTimes messages, then verifies as webhook does
//	gone         answers 410 Gone
//	down         answers 500 until the demo brings it back, then verifies
//
// It appends its Input (Examples, embedded in herald, or a Corpus
// directory) and registers, through the same store: each actor stream to
// the inbox; each webhook stream to cloudevents, webhook, flaky, gone and
// down; each task stream to a2a. Then a push.Worker per namespace runs (the
// real transport, allowed to reach loopback over http) with a low retry
// ceiling (MaxAttempts, RetryDelay apart) until every registration has
// delivered everything or is parked: gone at once (410), down at the
// ceiling. The demo shows a table per registration, `herald registrations
// --parked`, brings down back, unparks it and waits for it to catch up.
//
// # Verification
//
// Every verifying receiver checks a delivery first with the receiving side
// of its wire's library, then against the journal: the demo computes, by
// running the same projection over the records the journal holds, which
// messages each registration's receiver should get, in order; a receiver
// counts a message verified only when it is the next one expected (by id,
// or by body where the wire carries no id) with the expected body. The demo
// passes (Summary.OK) when no receiver refused anything, every verifying
// receiver verified exactly what the journal says it should have received,
// gone's registration is parked with its cursor at 1, and down's recovered.
package demo
