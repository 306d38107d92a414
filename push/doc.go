// Package push delivers journal records to the receivers that registered for
// them: at least once, in order per registration, with deterministic backoff,
// honoured Retry-After, and parking instead of giving up.
//
// # Vocabulary
//
// A [Registration] says who wants a stream's records and where, and keeps a
// cursor (NextSeq: the first seq not yet acknowledged). A [Projection] turns
// a record into the wire [Message] values of one registration (ActivityPub,
// CloudEvents, A2A, Standard Webhooks: see herald's projection packages). A
// [Transport] sends a message and classifies the answer as an [Outcome]. A
// [Store] keeps registrations, their cursors, leases and [Evidence]. A
// [Worker] serves one namespace; each call of [Worker.RunOnce] is a sweep.
//
// # The sweep
//
// RunOnce(ctx, at, limit) claims up to limit due registrations of the
// worker's namespace (Store.Due, which stamps a lease), then serves them at
// most MaxInFlight at once and at most MaxPerHost of one host at once. A
// turn serves one registration a page at a time: it reads up to DrainPage
// records past the cursor and sends them in seq order through the
// registration's window (below). The cursor moves past a record only when
// every message of it was accepted (2xx) or it had none (a record whose
// kind the registration does not want has none: [Registration.Wants]), and
// is written once per page. A page acknowledged in full is saved with
// Store.Checkpoint, which keeps the claim, and the turn goes on to the next
// page, until the stream's end, its budget (half the lease after the
// claim) or a claim of the worker waiting for a slot it could take ends it
// (in a sweep, one its host's MaxPerHost does not hold back, or one of the
// turn's own host): a backlog keeps its slot only while no other
// registration wants one. On
// a failure the turn stops: a permanent refusal (410 Gone, a URL the network
// guard refuses) parks the registration; a transient one retries at the
// receiver's Retry-After (clamped to [1 s, MaxRetryAfter]) or at the next
// [Backoff] instant, and parks when attempts reach MaxAttempts. A record the
// projection calls terminal completes the registration, which is deleted.
//
// A failure that says nothing about the record (Outcome.HostLevel: no
// connection, a timeout, a TLS failure, a reset, a gateway's 502/503/504
// without Retry-After) is charged to the registration's host, not to the
// registration, when the store is a [HostStore]: after DefaultHostDownAfter
// in a row the host is down and Due holds its registrations, but for one
// probe per [ProbeDelay] window; any answer brings it up and releases them.
// Nothing is parked for a host (README, "Hosts").
//
// # Windows
//
// [Registration.Window] (W, 1 to [MaxWindow], default 1) is how many of a
// registration's messages may be unacknowledged at once. A turn sends its
// page in seq order with at most W messages in flight, and starts record
// N+W only after N was acknowledged (invariant 3; with W = 1 this is v1's
// strict order, each message sent after the previous one's answer). A
// receiver with W > 1 may see records out of order within the window. The
// cursor is the first unacknowledged record. A failure stops new sends and
// lets those in flight end; then the outcome at the first unacknowledged
// record decides, as with W = 1 (retry at its Retry-After or backoff, park
// on 410, skip on a 4xx under RejectSkip, charge the host for a host-level
// failure), and it is one attempt, however many messages failed. Nothing
// after a terminal record is sent before it was acknowledged. Each message
// in flight holds one of its host's MaxPerHost tokens: MaxPerHost bounds
// messages to a host, MaxInFlight bounds turns.
//
// # The dispatcher
//
// [Worker.Run] is the daemon's loop. It keeps up to MaxInFlight turns
// running, and a slot freed by a turn's end is refilled at once, from claims
// it holds ready (at most as many as its slots, each with its own lease and
// budget) topped up by a fresh claim when half of them are used; so a slow
// or silent receiver holds one slot for at most the transport's timeout and
// delays only its own registrations, and a high fan-out costs one Store.Due
// per half MaxInFlight turns, not one per turn. A host is a
// URL's host:port ([HostOf]); the worker has at most MaxPerHost messages in
// flight to any host: each send holds one of the host's tokens, and the
// dispatcher's claims pass what it holds per host to Store.Due
// (DueQuery.Busy), so that a claim never takes more of a host than it may
// serve and the other slots stay free for other hosts. A turn with a
// backlog holds its one slot from page to page only while no ready claim
// waits for it (the sweep above), so it never delays another registration by
// more than a page. A turn that reached its stream's end and ran across a
// Worker.Wake reads its stream once more before it releases its claim, and
// sends what it finds under the same claim (records the wake may be for,
// which the lease hid from the claims made meanwhile), never more than a
// drain page past the cursor's last write. RunOnce is one pass of this
// dispatcher: one claim at the caller's instant, served to its end.
// Overlapping RunOnce calls, and RunOnce beside Run, are safe: each claim
// takes its own lease, which fences every write.
//
// Turns of one worker share the database's work where it is the same.
// Turns that read one stream from one seq share one Journal.Read (a page
// stands only for turns claimed before it was read, and each gets its own
// copy); on a store that is an [AdvanceBatcher] (store/postgres), the
// Advance calls of turns that end while another's is being saved go
// together in one round trip and one commit. Advance means what it always
// did, and each turn waits for its own save's answer before its slot is
// freed.
//
// The caller's clock decides every instant: at is the instant of due-ness,
// backoff, lease expiry and signature dates, and [Worker.Run] is the one
// place that passes time.Now(). RunOnce reads the wall clock only for a
// sweep's budget and the durations it reports to hooks, which change no
// instant (invariant 7).
//
// # Guarantees
//
// The invariants that code and tests cite by number ("invariant 3",
// TestInvariant3Order) are listed once, in README.md, "Delivery semantics":
// no loss, at least once with duplicates bounded by a page plus the window,
// order per registration within its window, no skipped commits, monotonic
// cursors, parking keeps the cursor, the caller's clock, idle costs
// nothing, idempotent append, bad input refused. Beyond them: a store or
// journal error is never blamed on a receiver, and records are deleted only
// by retention, once every registration of their stream acknowledged them
// (store.Retention).
package push
