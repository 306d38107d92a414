// Package demo is `herald demo`: herald's whole job, on this machine, in
// one command and well under a minute.
//
// Run starts seven receivers on loopback, each a real HTTP server: six
// verify what they get with the receiving side of their wire's library
// (flaky after a few 503s, down once the demo brings it back), gone answers
// 410. It appends its Input, registers each stream for the receivers of
// its wire and delivers with a push.Worker per namespace, at a low retry
// ceiling, until every registration has delivered everything or is
// parked; then it unparks down's registrations and waits for them.
//
// A receiver counts a message verified only when it is the next one the
// journal says it should get: the registration's projection of the
// records the journal holds. The run passes (Summary.OK) when no receiver
// refused anything, each verified all it should have, gone's registration
// is parked at cursor 1 and down's recovered.
package demo
