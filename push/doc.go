// Package push delivers journal records to the receivers that registered for
// them: at least once, in order per registration, with deterministic backoff,
// honoured Retry-After, and parking instead of giving up.
//
// A [Registration] says who wants a stream's records and where, and keeps a
// cursor (NextSeq: the first seq not yet acknowledged). A [Projection] turns
// a record into [Message] values; a [Transport] sends one and classifies the
// answer as an [Outcome]; a [store.Store] keeps registrations, cursors, leases and
// [store.Evidence]. A [Worker] serves one namespace.
//
// # Turns
//
// A worker claims due registrations (Store.Due stamps a lease) and serves
// each in a turn: at most MaxInFlight turns, and MaxPerHost messages to one
// host ([store.HostOf]), at once. A turn reads a page past the cursor, DrainPage
// records or fewer when their payloads would pass PageBytes (a larger
// record alone), and sends them in seq order, at most [Registration.Window] unacknowledged:
// record N+W never starts before N was acknowledged. The cursor passes a
// record only when every message of it was accepted (2xx) or it had none
// ([Registration.Wants]), and is written once a page; Store.Checkpoint saves
// a full page and keeps the claim while the turn's budget (half the lease)
// lasts and no other claim waits for its slot. The worker renews the lease
// of every claim it holds each third of the lease (Store.Renew); what is
// still in flight at nine tenths of a lease it could not renew is abandoned
// uncounted.
//
// On a failure the turn lets what is in flight end; the outcome at the first
// unacknowledged record counts as one attempt. A permanent one (410, a URL
// the network guard refuses) parks; a transient one retries at Retry-After
// (clamped to [1 s, MaxRetryAfter]) or the next instant of its
// [RetryPolicy], parking at its ceiling; a 4xx under RejectSkip is recorded and passed. A failure that
// says nothing about the record (Outcome.HostLevel) is charged to the host
// ([store.HostStore]): after store.HostDownAfter in a row Due holds the host's
// registrations but for one probe per [store.ProbeDelay], and any answer releases
// them. A terminal record completes the registration, which is deleted.
//
// # Resends
//
// An operator's resend of a record the registration acknowledged
// (Store.Resend) is claimed with the turns by every claim of RunOnce, and
// of Run after a wake or its interval (Store.DueResends, under a lease of
// its own), and sent once in a slot, host token held, as a turn sends: the
// message the projection makes of the record, its original id, signed at
// the claim's instant. Its answer is its evidence (Store.Resent); the
// cursor, the attempts, the backoff, a pause and the host's failures stay
// as they were (an answer tells a troubled host it is up).
//
// # Scheduling
//
// [Worker.RunOnce] is one claim at the caller's instant, served to its end
// (scheduler mode). [Worker.Run] keeps claiming on the wall clock: it holds
// up to twice MaxInFlight claims, refills a freed slot at once, and claims on
// [Worker.Wake], on turn ends that may have left work, when a rate lets a
// held registration's next burst start ("Rate"), and every interval.
// A slot is held for a message, not a turn: a message that waits
// [SlowAfter] for its answer moves its turn to a budget of its own
// (WithMaxSlow), so slow receivers never hold a healthy one's slot; sockets
// stay capped per host. Overlapping sweeps are safe: every write is
// fenced by its claim's lease. Turns that read one stream from one seq share
// one Journal.Read (internal/pages); a [store.AdvanceBatcher] saves concurrent
// turns' cursors in one round trip.
//
// The caller's clock decides every instant (due-ness, backoff, lease expiry,
// signature dates); real time bounds only the network, a turn's budget and
// its lease. The numbered invariants are in README.md, "Delivery semantics".
//
// # Rate
//
// A registration's [store.Rate] of N a period P promises its receiver never
// more than N requests (messages, retries included) in any window of P, from
// all the workers on one store together. Only one turn holds a registration
// at a time, so the limiter's state lives in its row and is written under
// the claim: PacedUntil, the earliest instant its next burst may start
// (Store.Pace, before the turn's last write, which also holds it from Due
// until then).
//
// A turn sends one burst: at most b messages (burstOf: N split into m bursts
// of b = N/m, m the largest divisor of N that keeps them MinBurstSpacing
// apart; 10/s is 5 every 500 ms). It starts at its claim's instant t, at or
// after PacedUntil, and ends when the last answer came, at e; every request
// of it reached the receiver between t and e. It then sets PacedUntil to e
// + P/m, so the next burst starts a spacing after this one's requests all
// arrived, wherever it runs. Bursts i and j then satisfy t_j >= e_i +
// (j-i)·P/m: a window of P holds requests of at most m bursts, N requests,
// whatever each took to arrive (a loaded machine, a window's concurrent
// sends, a slow answer only delay the next burst). A bucket of N tokens
// would allow 2N-1 in one window; a pace from the claim alone, N plus a
// burst whenever one arrived late. A burst's e is its turn's clock: the
// claim's instant under RunOnce (no wall clock; the same inputs give the
// same bursts), the wall clock under Run (whose instants are the wall
// clock's). Workers' clocks must agree, as leases already need.
//
// When the burst is spent the turn stops: its cursor is saved, nothing is
// charged, no evidence is written, and it is due at PacedUntil, which Run
// claims at (the turn's end reports it). A claim before PacedUntil (after an
// unpark, a rewind) sends nothing and only waits, counted Paced. A turn that
// ended without its write (killed, or fenced out late) may have sent a
// burst no store recorded, which reached the receiver before its lease
// lapsed: a claim of a lapsed lease (store.Status.Lapsed) waits a spacing
// from its instant. A record of more messages than b can never be sent so,
// and parks. An operator's unpark, rewind or pause-and-resume of a
// registration whose turn is in flight takes the lease from a turn that may
// still be sending: the next burst may then come early by that turn's rest.
// A resend ("Resends") is out of band, outside the rate: one request the
// operator asked for.
package push
