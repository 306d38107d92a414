// Package push delivers journal records to the receivers that registered for
// them: at least once, in order per registration, with deterministic backoff,
// honoured Retry-After, and parking instead of giving up.
//
// A [Registration] says who wants a stream's records and where, and keeps a
// cursor (NextSeq: the first seq not yet acknowledged). A [Projection] turns
// a record into the wire [Message] values of one registration; a [Transport]
// sends a message and classifies the answer as an [Outcome]; a [Store] keeps
// registrations, their cursors, leases and [Evidence]. A [Worker] serves one
// namespace.
//
// # Turns
//
// A worker claims due registrations (Store.Due stamps a lease) and serves
// each in a turn, at most MaxInFlight turns at once and at most MaxPerHost
// messages to one host (host:port, [HostOf]) at once. A turn reads up to
// DrainPage records past the cursor and sends them in seq order through the
// registration's window: at most [Registration.Window] messages
// unacknowledged, record N+W never started before N was acknowledged (with
// W = 1, strict order). The cursor moves past a record only when every
// message of it was accepted (2xx) or it had none (a kind the registration
// does not want: [Registration.Wants]), and is written once per page. A
// full page is saved with Store.Checkpoint, which keeps the claim, and the
// turn goes on while its budget lasts (half the lease from the claim) and no
// other claim waits for its slot. Deliveries still in flight at nine tenths
// of the lease are abandoned uncounted, so no turn outlives its lease.
//
// On a failure the turn stops sending and lets what is in flight end; the
// outcome at the first unacknowledged record decides, as one attempt: a
// permanent refusal (410 Gone, a URL the network guard refuses) parks the
// registration; a transient one retries at the receiver's Retry-After
// (clamped to [1 s, MaxRetryAfter]) or at the next [Backoff] instant, and
// parks when attempts reach MaxAttempts; a 4xx under RejectSkip is recorded
// and passed. A failure that says nothing about the record
// (Outcome.HostLevel) is charged to the host instead ([HostStore]): after
// DefaultHostDownAfter in a row the host is down, Due holds its
// registrations but for one probe per [ProbeDelay] window, and any answer
// releases them. A record the projection calls terminal completes the
// registration, which is deleted.
//
// # Scheduling
//
// One dispatcher runs the turns. [Worker.RunOnce] is one pass of it: one
// claim at the caller's instant, served to its end (scheduler mode).
// [Worker.Run] keeps it going on the wall clock: it holds up to twice
// MaxInFlight claims, refills a freed slot at once, claims again on
// [Worker.Wake], on turn ends that may have left work, and every interval,
// and passes the hosts it has in flight to Store.Due so that a claim takes no
// more of a host than it may serve. A slow or silent receiver holds one slot
// and delays only its own registrations. A turn that ran across a Wake reads
// its stream once more before it releases its claim. Overlapping RunOnce
// calls, and RunOnce beside Run, are safe: every write is fenced by its
// claim's lease.
//
// Turns of one worker share work: turns that read one stream from one seq
// share one Journal.Read (pages.go), and on an [AdvanceBatcher] store
// (store/postgres) concurrent Advance calls go in one round trip.
//
// The caller's clock decides every instant (due-ness, backoff, lease expiry,
// signature dates); real time bounds only the network, the turn's budget and
// its lease's end. The invariants that code and tests cite by number are
// listed once, in README.md, "Delivery semantics".
package push
