// Package journal defines herald's append-only journal: records
// partitioned into streams, each numbered by a 1-based, gapless,
// commit-ordered seq. Records are never updated; they are removed only by
// retention, once every registration acknowledged them (store.Retention).
//
// Every record carries a caller-chosen id (an activity URI, a CloudEvent
// id, a UUID), unique among the records the journal holds: appending an id again with the
// same content returns the stored record and writes nothing, so retrying
// an append is safe. An entry with Final set seals its stream (A2A tasks in
// a terminal state, deleted actors).
//
// Implementations wrap one of the sentinels [ErrInvalid], [ErrConflict],
// [ErrSealed] and [ErrNotFound] (test with [errors.Is]); invalid input is an
// [*InvalidError] naming the field. A failed append writes nothing: a batch
// is all or nothing.
package journal
