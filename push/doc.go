// Package push delivers journal records to the receivers that registered for
// them: at least once, in order per registration, with deterministic backoff,
// honoured Retry-After, and parking instead of giving up.
//
// A [Registration] says who wants a stream's records and where, and keeps a
// cursor (NextSeq: the first seq not yet acknowledged). A [Projection] turns
// a record into [Message] values; a [Transport] sends one and classifies the
// answer as an [Outcome]; a [store.Store] keeps registrations, cursors, leases and
// [store.Evidence]. A [Worker] serves one namespace. (Projection, Message,
// Transport and Outcome are package wire's, which push names too; the
// dispatcher and its turns are in push/internal/dispatch, whose doc says how
// they keep what this one promises.)
//
// # Turns
//
// A worker claims due registrations (Store.Due stamps a lease) and serves
// each in a turn: at most MaxInFlight turns, and MaxPerHost messages to one
// host ([store.HostOf]), at once. A turn sends records in seq order, at most
// [Registration.Window] unacknowledged: record N+W never starts before N was
// acknowledged. The cursor passes a record only when every message of it was
// accepted (2xx) or it had none ([Registration.Wants]), and is written once
// a page (DrainPage records, fewer when their payloads would pass
// PageBytes): a crash repeats at most a page. A claim's lease is renewed
// while its turn runs; a turn that could not renew it is abandoned, uncounted,
// before it lapses.
//
// On a failure the turn lets what is in flight end; the outcome at the first
// unacknowledged record counts as one attempt. A permanent one (410, a URL
// the network guard refuses) parks; a transient one retries at Retry-After
// (clamped to [1 s, [WithMaxRetryAfter]]) or the next instant of its
// [RetryPolicy], parking at its ceiling; a 4xx under RejectSkip is recorded and passed. A failure that
// says nothing about the record (Outcome.HostLevel) is charged to the host
// ([store.HostStore]): after store.HostDownAfter in a row Due holds the host's
// registrations but for one probe per [store.ProbeDelay], and any answer releases
// them. A terminal record completes the registration, which is deleted.
//
// # Resends
//
// An operator's resend of a record the registration acknowledged
// (Store.Resend) is sent once, out of band, as a turn sends: the message the
// projection makes of the record, its original id, signed at the claim's
// instant. Its answer is its evidence (Store.Resent); the cursor, the
// attempts, the backoff, a pause and the host's failures stay as they were
// (an answer tells a troubled host it is up).
//
// # Scheduling
//
// [Worker.RunOnce] is one claim at the caller's instant, served to its end
// (scheduler mode). [Worker.Run] keeps claiming on the wall clock: on
// [Worker.Wake], when a turn ends that may have left work, when a rate lets
// a held registration's next burst start, and every interval. A slot is held
// for a message, not a turn: a message that waits [SlowAfter] for its answer
// moves its turn to a budget of its own (WithMaxSlow), so slow receivers
// never hold a healthy one's slot; sockets stay capped per host. Overlapping
// sweeps are safe: every write is fenced by its claim's lease.
//
// The caller's clock decides every instant (due-ness, backoff, lease expiry,
// signature dates); real time bounds only the network, a turn's budget and
// its lease. The numbered invariants are in README.md, "Delivery semantics".
//
// # Rate
//
// A registration's [store.Rate] of N a period P promises its receiver never
// more than N requests (messages, retries included) in any window of P, from
// all the workers on one store together, sent in bursts at least
// [MinBurstSpacing] apart. README.md, "Rate", says how, and its edges: a
// record of more messages than a burst parks, an operator's action on a
// turn in flight may let a burst come early, a resend goes beside the rate.
package push
