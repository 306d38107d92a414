// Package dispatch is a push.Worker's engine: the dispatcher that claims
// registrations and runs each claim as a turn in a slot, the turns that send
// a page through a registration's window and save its cursor, leases,
// resends and rates. push's doc says what a worker promises; this one how.
//
// # Turns
//
// A turn reads a page past the cursor, DrainPage records or fewer when their
// payloads would pass PageBytes (a larger record alone), and sends it through
// the registration's window (window.go). Store.Checkpoint saves a full page
// and keeps the claim while the turn's budget (half the lease) lasts and no
// other claim waits for its slot; otherwise the turn saves with Advance and
// ends. The dispatcher renews the leases of the claims it holds, and ends a
// turn whose lease it could not renew (leases.go). Turns that read one
// stream from one seq share one Journal.Read (internal/pages); a
// store.AdvanceBatcher saves concurrent turns' cursors in one round trip
// (internal/groupcommit).
//
// # Resends
//
// A pending resend is claimed with the turns by every claim of RunOnce, and
// of Run after a wake or its interval (Store.DueResends, under a lease of
// its own), and sent once in a slot, host token held (resend.go).
//
// # Scheduling
//
// Run holds up to twice MaxInFlight claims and refills a freed slot at once
// (run.go). A send that waits SlowAfter nudges the dispatcher, which moves
// its turn to the slow budget (MaxSlow), full or not: past the budget, the
// turn yields at its next record when a claim waits (dispatcher.demote).
// The worker then holds the host slow (hosts.Table.MarkSlow) until a turn
// of it is answered within SlowAfter, or for hosts.SlowMemory: its claims
// start in the slow budget or wait for room there (start), beside the
// claims that wait for a regular slot, which they do not count against.
//
// # Rate
//
// Only one turn holds a registration at a time, so the limiter's state lives
// in its row and is written under the claim: PacedUntil, the earliest
// instant its next burst may start (Store.Pace, before the turn's last
// write, which also holds it from Due until then).
//
// A turn sends one burst (burstOf: of a rate of N a period P, one of m
// bursts of N/m). It starts at its claim's instant t, at
// or after PacedUntil, and ends when the last answer came, at e (the turn's
// clock, turn.now); every request of it reached the receiver between t and
// e. It then sets PacedUntil to e + P/m, so bursts i and j satisfy
// t_j >= e_i + (j-i)·P/m: a window of P holds requests of at most m bursts,
// N requests, whatever each took to arrive (README.md, "Rate", says why a
// bucket or a pace from the claim would not).
//
// A spent burst ends the turn as README's "Not a failure" says; the turn's
// end reports PacedUntil, which Run claims at. A claim before PacedUntil
// (after an unpark, a rewind) sends nothing and only waits, counted Paced. A
// claim of a lapsed lease (store.Status.Lapsed) waits a spacing from its
// instant: the lost turn may have sent a burst no store recorded.
package dispatch
