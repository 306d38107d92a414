// Package journal defines herald's append-only journal: records partitioned
// into streams, each with a 1-based, gapless, commit-ordered sequence number
// (seq).
//
// An application appends [Entry] values to a stream, ideally in the same
// database transaction as its own write (see store/postgres AppendTx, which
// assigns seqs after the commit). The journal assigns each one a seq and
// returns the stored [Record]. Records are never updated or deleted.
//
// # Identity and idempotency
//
// Every record carries a caller-chosen id (an activity URI, a CloudEvent id, a
// UUID) that is unique in the whole journal. Appending an id that already
// exists with the same content (stream, kind, content type, payload, final
// flag) returns the stored record and writes nothing; with different content
// it fails with [ErrConflict]. That makes retries of an append safe.
//
// # Sealing
//
// An entry with Final set seals its stream: any later append of a new id fails
// with [ErrSealed]. A2A tasks that reach a terminal state and deleted actors are
// typical final records.
//
// # Errors
//
// Implementations return errors that wrap one of the sentinels [ErrInvalid],
// [ErrConflict], [ErrSealed] and [ErrNotFound], so callers test them with
// [errors.Is]. Invalid input is reported as an [*InvalidError] naming the field.
// A failed append writes nothing: a batch is all-or-nothing.
package journal
