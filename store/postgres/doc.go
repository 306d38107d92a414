// Package postgres is herald's production store: a journal.Journal and a
// push.Store over one PostgreSQL database (pgx/v5, pgxpool), shared by any
// number of worker processes on any number of hosts.
//
//	const url = "postgres://herald@db.example/herald"
//	_, err := postgres.MigrateUp(ctx, url) // herald migrate up
//	s, err := postgres.Open(ctx, url)      // checks the schema version
//
// Open opens a store with a pool of its own; New uses the caller's pool
// (NewPool makes one), for AppendTx in the caller's transactions. Neither
// changes anything, and both refuse a database whose schema is not this
// binary's (store.ErrSchemaBehind: run herald migrate up).
//
// # Schema
//
// migrations/001_init.up.sql: herald_stream (one row a stream: head, final
// seq, pending marker, low-water mark), herald_record, herald_seq and
// herald_sequencer (below), herald_registration, herald_evidence, herald_host
// (push.HostStore), and the function herald_append. Migrations are embedded
// and run by internal/migrate (MigrateUp, MigrateDown, MigrationStatus), each
// in one transaction with its row in herald_schema_migrations
// (golang-migrate's shape), under an advisory lock, so that concurrent
// migrations apply each once. A version marked dirty is refused
// (store.ErrSchemaDirty, saying how to repair it).
//
// # Appending
//
// A global sequence would let a reader see seq 6 of a transaction that
// committed before the one holding seq 5, and never see 5; a per-stream lock
// held to the appender's commit throttles the application's own writes, and
// so does a NOTIFY in its transaction (PostgreSQL serialises notifying
// commits). So Append and AppendTx only insert into herald_record, whose
// rows are never updated: each carries its transaction's id (xid8) and its
// insertion order (pos), and writes two index entries, its id's and the
// sequencer's work list's (xid, pos). The one statement also checks the seal
// and that no id is stored (two partial indexes, empty for an open stream),
// so idempotency, conflicts and sealing are decided in the appending
// transaction: an id stored with the same content (journal.Digest) returns
// the stored record, with other content is a *journal.ConflictError. A
// concurrent append of the same new id waits on the primary key for that id
// only; once the other commits, a one-record append is decided as above,
// and a larger one fails with journal.ErrConflict (a batch is
// all-or-nothing).
//
// One sequencer at a time, elected by an advisory transaction lock, numbers
// the records by snapshots, as PgQ batches events. herald_sequencer keeps
// done, a snapshot whose committed transactions' records are all numbered. A
// step is one READ COMMITTED transaction in one round trip: the lock, then
// one statement whose own snapshot is the window: it gives the records of
// the transactions that committed in the window and not in done, per stream
// in (xid, pos) order, the seqs head+1… in herald_seq, creates new streams'
// rows, moves the heads, sets the pending markers, notifies once, and makes
// the window done. Readers (Read, Head, Lookup, Due) see numbered records
// only. So invariant 4 holds: a record is numbered only once committed, and
// one that commits after a window is numbered by a later step, after all
// that step numbered; seqs are gapless. A step that dies leaves nothing
// behind, and a long transaction delays only its own records, costing each
// step one index probe. The price is a narrow row and two index entries per
// record in herald_seq, and a stream row update per stream and step. A step
// numbers at most 10,000 records; a full page leaves the window open for the
// next steps.
//
// RunSequencer (herald run) steps on a connection of its own every 5 to
// 10 ms while records come (the fewer a step finds, the longer the next wait:
// each step is a commit; WithSequencerInterval) and every 100 ms when none
// do. Due runs a step first unless another process holds the lock or this
// Store runs RunSequencer, so scheduler mode (RunOnce, herald sweep) needs
// no daemon; Append runs one after its commit, waiting for the lock, and so
// returns the seqs; Sequence runs one on demand. AppendTx returns new
// records with Seq 0.
//
// # Sealing
//
// An append to a stream that is sealed, or that holds a committed final
// record not yet numbered, is refused (*journal.SealedError, FinalSeq 0 in
// the second case). Two transactions that append to one stream, one of them
// a final record, can both pass that check and commit. If one step numbers
// both, the final record goes last. If the other commits after the final
// record was numbered, the step refuses it: it gets no seq, is never read
// nor delivered, and stays with the reason in herald_seq (Refused lists
// them); appending its id again is ErrSealed. So is a second final record.
//
// # Appending from SQL: herald_append
//
// herald_append is AppendTx for an application in any language, in its own
// transaction, by the same path, with the same checks, digest, idempotency
// and sealing: an entry appended from Go and from SQL is one record (README,
// "From other languages").
//
//	SELECT herald_append('orders/1', 'evt-1', 'order.created', '{"total":42}'::jsonb);
//
//	herald_append(stream text, id text, kind text, payload P,
//	              content_type text DEFAULT D, final boolean DEFAULT false,
//	              traceparent text DEFAULT NULL, tracestate text DEFAULT NULL) RETURNS text
//
// P and its default content type D: jsonb or json, application/json; text,
// text/plain; charset=utf-8; bytea, application/octet-stream (an untyped
// literal is text). The payload is bytea's bytes, text's in UTF-8, json's
// text as given, jsonb's text form ({"total": 42}): what receivers get and
// the digest covers. A NULL content type or final is the default; an empty
// content type is application/json, as for a journal.Entry. It returns the
// id, for a new record and for a repeat of a stored one. Lengths are UTF-8
// bytes (the checks assume a UTF8 database); the payload limit is the
// setting herald.max_payload, else journal.DefaultMaxPayload. traceparent
// and tracestate are the record's trace context, as journal.Entry's (NULL or
// empty for none). Errors name the field in Go's message and in the error's
// column (PG_DIAG_COLUMN_NAME); reserved names (journal.ReservedPrefix,
// journal.ReservedIDPrefix) are invalid input.
//
//	SQLSTATE  meaning                                    column
//	HA400     invalid input                              stream, id, kind, content_type, payload, traceparent or tracestate
//	HA413     payload over the limit                     payload
//	HA409     the id exists with other content           the first that differs: stream, kind, content_type, payload, final
//	HA423     the stream is sealed (journal.ErrSealed)   stream
//	40001     the id was committed after the snapshot (REPEATABLE READ, SERIALIZABLE), or a race: retry the transaction
//	22023     the setting herald.max_payload is not a number of bytes
//
// They abort the caller's transaction, as any SQL error (a SAVEPOINT lets
// it go on). The function runs with the caller's privileges (INSERT and
// SELECT on herald_record, SELECT on herald_seq and herald_stream) and the
// search_path pg_catalog, then its schema.
//
// # Idle costs nothing, without lost wake-ups
//
// A registration is due when its cursor is at or behind its stream's head,
// which lives in herald_stream, and a flag on every registration set by every
// append would cost a write per record and receiver. Instead herald_stream
// carries a pending marker, with a partial index on the pending streams:
//
//   - Writes that can make a registration lag set it on the stream row they
//     lock first: the sequencer (in the UPDATE that moves the head),
//     Register, Unpark, Rewind and Skip.
//   - Due reads only pending streams and, through the index (stream,
//     next_seq) WHERE NOT parked, their registrations at or behind the head:
//     an idle database costs three index probes that find nothing.
//   - Due clears the marker of streams where no unparked registration lags,
//     in two statements: the first locks those stream rows (SKIP LOCKED: a
//     stream being sequenced stays pending), the second clears the marker
//     where, in its snapshot taken after the locks, still none lags. They go
//     last, with the commit, so the sequencer waits for those locks little.
//
// A write that makes a registration lag holds the stream row's lock until
// it commits: if it committed before the sweep locked the row, the second
// statement sees it; if after, it sets the marker again. One statement would
// not do: under READ COMMITTED a row re-checked after a lock wait is judged
// with subqueries of the older snapshot. Parked registrations do not count
// as lagging; one in backoff does, so its stream is read by each sweep.
//
// # Claiming and fencing
//
// Due claims with FOR NO KEY UPDATE SKIP LOCKED and stamps the lease (owner,
// until) and next_attempt_at = at in the same statement, so a second worker
// never gets a live lease nor waits for another's claim, and the least
// recently claimed go first. Its transaction commits without waiting for the
// WAL flush: a crash of the database loses at most a lease, cleared markers
// and a probe's instant, and the turn's first fenced write, a synchronous
// commit, makes the claim durable first.
//
// The writes under a claim (Advance, Checkpoint, Retry, Park, Complete,
// HostFailed) are fenced by the lease: in one round trip, a first statement
// locks the registration's row and reads its lease owner and its stream's
// head, and the write repeats the fence in its WHERE clause (the claim's
// owner, a cursor at most head+1). A write that did not apply is told apart
// by what the first read: no row (journal.ErrNotFound), another owner
// (push.ErrLeaseLost), else a cursor past head+1 (journal.ErrInvalid).
// Advance is GREATEST(next_seq, n), so racing workers never move a cursor
// back; Retry and Park write the failure and its evidence in one statement,
// so a fenced-out failure stores none; evidence is trimmed to
// push.MaxEvidence rows. Park and Complete append herald's event
// (push.EventsStream) in the same transaction. AdvanceBatch is Advance for
// many claims in one round trip, locking their rows in key order. None of
// them touches the stream row: they never make a registration lag. Unpark,
// Skip and Rewind clear the lease, so a turn in flight cannot undo them.
//
// # Notifications
//
// A sequencer step that numbered records notifies NotifyChannel (payload how
// many) in its own transaction; no appending transaction notifies. Listen
// returns a Listener on a connection of its own. RunSequencerWaking also
// tells its caller after each such step, and that Store's Listeners skip its
// steps' notifications, which other processes still hear.
//
// # Retention
//
// Prune applies store.Retention's rules stream by stream, each in a short
// transaction that locks the stream row (SKIP LOCKED: a stream being
// sequenced or swept waits for the next pass). Refused records stay for the
// retention age; a sealed stream goes once nothing of it is left, none
// waiting for the sequencer either.
//
// # Errors
//
// No pgx or pgconn type is reachable from a returned error. A missing row is
// journal.ErrNotFound naming what was looked for; a unique violation
// journal.ErrConflict; a broken or refused connection ErrUnavailable (the
// pool's connections are reset); a serialization failure or deadlock
// ErrRetry; other failures an *Error with the server's message and SQLSTATE.
package postgres
