// Package demo is `herald demo`: herald's whole job, on this machine, in
// one command and well under a minute.
//
// Run checks that the database is empty, generates the run's credentials,
// and starts seven receivers on loopback, each a real HTTP server:
//
//	inbox        ActivityPub: HTTP signature (go-fed/httpsig), Digest, Date, no bto/bcc
//	cloudevents  sdk-go's own HTTP receiver, a bearer token, the event's attributes
//	a2a          both token headers, a2a-go v2 decodes the StreamResponse
//	webhook      Standard Webhooks signature (the reference library)
//	flaky        503 with Retry-After to its first messages, then as webhook
//	gone         410 Gone
//	down         500 until the demo brings it back, then as webhook
//
// It appends its Input (Examples, or a Corpus directory) and registers each
// actor stream to the inbox, each webhook stream to cloudevents, webhook,
// flaky, gone and down, each task stream to a2a. A push.Worker per namespace
// (the real transport, allowed loopback over http) runs with a low retry
// ceiling until every registration has delivered everything or is parked:
// gone at once, down at the ceiling. The demo shows the registrations and
// `herald registrations --parked`, brings down back, unparks it and waits
// for it to catch up.
//
// A verifying receiver checks a delivery with the receiving side of its
// wire's library, then against the journal: the demo runs the registration's
// projection over the records the journal holds, and the receiver counts a
// message verified only when it is the next one expected (by id, or by body
// where the wire carries no id) with the expected body. The demo passes
// (Summary.OK) when no receiver refused anything, each verifying receiver
// verified exactly what the journal says it should have received, gone's
// registration is parked with its cursor at 1, and down's recovered.
package demo
