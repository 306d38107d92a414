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
// ends. The dispatcher renews the lease of every claim it holds each third
// of the lease (Store.Renew, leases.go); what is still in flight at nine
// tenths of a lease it could not renew is abandoned uncounted. Turns that
// read one stream from one seq share one Journal.Read (internal/pages); a
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
// its turn to the slow budget (MaxSlow) or, with that full, has it yield its
// slot at its next record when a claim waits.
//
// # Rate
//
// Only one turn holds a registration at a time, so the limiter's state lives
// in its row and is written under the claim: PacedUntil, the earliest
// instant its next burst may start (Store.Pace, before the turn's last
// write, which also holds it from Due until then).
//
// A turn sends one burst: at most b messages (burstOf: N split into m bursts
// of b = N/m, m the largest divisor of N that keeps them MinBurstSpacing
// apart). It starts at its claim's instant t, at or after PacedUntil, and
// ends when the last answer came, at e; every request of it reached the
// receiver between t and e. It then sets PacedUntil to e + P/m, so the next
// burst starts a spacing after this one's requests all arrived, wherever it
// runs. Bursts i and j then satisfy t_j >= e_i + (j-i)·P/m: a window of P
// holds requests of at most m bursts, N requests, whatever each took to
// arrive (a loaded machine, a window's concurrent sends, a slow answer only
// delay the next burst). A bucket of N tokens would allow 2N-1 in one
// window; a pace from the claim alone, N plus a burst whenever one arrived
// late. A burst's e is its turn's clock: the claim's instant under RunOnce
// (no wall clock; the same inputs give the same bursts), the wall clock
// under Run (whose instants are the wall clock's). Workers' clocks must
// agree, as leases already need.
//
// When the burst is spent the turn stops: its cursor is saved, nothing is
// charged, no evidence is written, and it is due at PacedUntil, which Run
// claims at (the turn's end reports it). A claim before PacedUntil (after an
// unpark, a rewind) sends nothing and only waits, counted Paced. A turn that
// ended without its write (killed, or fenced out late) may have sent a
// burst no store recorded, which reached the receiver before its lease
// lapsed: a claim of a lapsed lease (store.Status.Lapsed) waits a spacing
// from its instant.
package dispatch
