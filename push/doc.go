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
// [Worker.Wake], on turn ends that may have left work, and every interval.
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
package push
