// Package postgres is herald's production store: a journal.Journal and a
// push.Store over one PostgreSQL database (pgx/v5, pgxpool), shared by any
// number of worker processes on any number of hosts.
//
//	const url = "postgres://herald@db.example/herald"
//	_, err := postgres.MigrateUp(ctx, url) // herald migrate up
//	s, err := postgres.Open(ctx, url)      // checks the schema version
//
// Open(ctx, url) opens a store with a pool of its own; Close closes it.
// New(ctx, pool) uses the caller's pool (NewPool makes one), for AppendTx
// in the caller's transactions. Opening refuses a database whose schema is
// not this binary's, and changes nothing: errors wrap store.ErrSchemaBehind
// ("run herald migrate up"), store.ErrSchemaAhead, store.ErrNotHerald, or
// store.ErrSchemaDirty.
//
// # Schema
//
// Five tables (migrations/001_init.up.sql): herald_stream (one row per
// stream: head, final seq, pending marker, low-water mark), herald_record,
// herald_registration, herald_evidence, and herald_host (host health: see
// hosts.go and push.HostStore), and the function herald_append (below).
//
// Migrations are embedded, numbered NNN_name.up.sql and .down.sql
// (store/sqlite's layout), and run by internal/migrate: MigrateUp,
// MigrateDown (one step) and MigrationStatus take the database URL, as the
// CLI does, and return a SchemaStatus. Each migration runs in one
// transaction together with its row in herald_schema_migrations (version,
// dirty: golang-migrate's shape), under an advisory transaction lock, so
// that two `herald migrate up` at once apply each migration once; a
// migration that fails rolls back whole. A version marked dirty is refused
// by every open and migration (store.ErrSchemaDirty, with how to repair it).
//
// # Appending: a plain INSERT, numbered after commit
//
// A global sequence would let a reader see seq 6 of a transaction that
// committed before the one holding seq 5, advance past 5 and never see it;
// a per-stream lock held to the appender's commit (herald v1) avoids that
// but throttles the application's own writes, and so does a NOTIFY in its
// transaction (PostgreSQL serialises notifying commits). So an append
// (Append, AppendTx) only inserts its records into herald_record, which
// no one updates: the row carries its transaction's id (xid8, the column's
// default pg_current_xact_id()) and its insertion order (pos), and writes
// two index entries, its id's (the primary key) and the sequencer's work
// list's (xid, pos). It takes no lock but the primary key entry of each new
// id. The same statement checks the seal and that no id is stored (one
// round trip; the ids are looked up only when one is; the seal check reads
// two partial indexes, of the sealed streams and of the final records,
// whose ranges are empty for an open stream), so idempotency, conflicts and
// sealing are decided at append time, in the appending transaction: an id
// that exists with the same content digest (journal.Digest, stored with
// the record) returns the stored record; another digest is a
// *journal.ConflictError naming the field; a concurrent append of the same
// new id waits, on the primary key, for that id only, and once the other
// commits is decided as above if it appends one record, or fails with
// journal.ErrConflict if it appends more (the batch is all-or-nothing).
//
// One sequencer at a time, elected by a PostgreSQL advisory transaction
// lock (pg_try_advisory_xact_lock), numbers the records, as PgQ batches
// events: by snapshots. herald_sequencer keeps done, a snapshot whose
// committed transactions' records are all numbered. Each step is one READ
// COMMITTED transaction in one round trip: take the lock; then one
// statement, whose own snapshot (pg_current_snapshot) is the window,
// finds the records of the transactions that committed in the window and
// not in done (those running at done, one index probe each, and those that
// began after it, one index range), gives each stream's records head+1…
// in (xid, pos) order in herald_seq, creates new streams' rows and moves
// the heads (the upsert takes the stream rows' locks), sets the pending
// markers, sends one NOTIFY and makes the window done; commit. Readers
// (Read, Head, Lookup, Due) see numbered records only, through herald_seq.
// This keeps invariant 4: a record is numbered only once committed, and
// one that commits after a step's window is numbered by a later step,
// after everything that step numbered; so a reader that sees #n has seen
// every record before it, and seqs are gapless. A step that dies before
// its commit leaves nothing behind (its transaction rolls back), and a
// long transaction elsewhere delays only its own records, by as long as it
// stays open, and costs each step one index probe. The cost is a narrow
// row and two index entries per record in herald_seq, and one stream row
// update per stream and step (BENCHMARKS.md, "The producer's cost"). A
// step numbers at most a page (10,000) of the window; a full page leaves
// the window open, and the next steps go on after its last record.
//
// Who runs it: RunSequencer, the daemon's loop (herald run), on a
// connection of its own, probes for records waiting every 5 to 10 ms while
// records come (the fewer a step finds, the longer the next wait: each
// step is a commit; WithSequencerInterval, herald run --sequencer-interval),
// backing off to 100 ms when none do (an idle database pays one probe of
// an empty index range per interval); Due runs a step first (skipping it
// if another process holds the lock, and in a Store that runs
// RunSequencer), so scheduler mode (RunOnce, herald sweep) needs no
// daemon; Append runs one after its commit, waiting for the lock, and so
// returns the seqs; Sequence runs one on demand. AppendTx cannot know the
// seq: it returns new records with Seq 0.
//
// # Sealing
//
// An append to a stream that is sealed, or that holds a committed final
// record not yet numbered, is refused at append time (*journal.SealedError,
// FinalSeq 0 in the second case). Two transactions that append to one
// stream, one of them a final record, can both pass that check and both
// commit. If one step numbers both, the final record goes last, so both are
// delivered. If the other commits after the final record was numbered, the
// step refuses it: it gets no seq, is never read nor delivered, and stays
// stored with the reason in herald_seq (Refused lists them); appending its
// id again is ErrSealed. A second final record is refused the same way.
//
// # Appending from SQL: herald_append
//
// The schema defines herald_append, AppendTx for an application in any
// language: called in its transaction, the record commits or rolls back
// with the application's own writes, by the same path (one INSERT numbered
// after commit, no NOTIFY, no stream lock), with the same checks, digest,
// idempotency and sealing, so an entry appended from Go and from SQL is one
// record (README, "From other languages", has Python and Ruby).
//
//	SELECT herald_append('orders/1', 'evt-1', 'order.created', '{"total":42}'::jsonb);
//
//	herald_append(stream text, id text, kind text, payload P,
//	              content_type text DEFAULT D, final boolean DEFAULT false,
//	              traceparent text DEFAULT NULL, tracestate text DEFAULT NULL) RETURNS text
//
// P and its default content type D: jsonb or json, application/json; text,
// text/plain; charset=utf-8; bytea, application/octet-stream. An untyped
// literal payload is text: cast it. The payload's bytes are bytea's, text's
// in UTF-8, json's text as given, and jsonb's text form (keys sorted, a
// space after ':' and ',': {"total": 42}), which is what receivers get and
// what the digest covers. A NULL content type or final is the default; an
// empty content type is application/json, as for a journal.Entry. It returns the record id,
// for a new record and for a repeat of a stored one (same id and content:
// nothing is written). Lengths are in UTF-8 bytes, as in journal; the
// character checks assume a UTF8 database. The payload limit is the setting
// herald.max_payload in bytes (ALTER DATABASE … SET herald.max_payload), else
// journal.DefaultMaxPayload, Go's. traceparent and
// tracestate are the record's trace context, checked and stored as
// journal.Entry's (NULL or empty for none; README, "One trace from the
// append to the receiver").
//
// Errors name the field in the message, which is Go's (e.g.
// "herald_append: invalid kind: has whitespace U+0020 at byte 5"), and in
// the error's column field (PG_DIAG_COLUMN_NAME). Reserved names are
// invalid input, as for AppendTx: a stream under "herald/"
// (journal.ReservedPrefix: herald's own, such as push.EventsStream) and an
// id starting "herald-event:" (journal.ReservedIDPrefix).
//
//	SQLSTATE  meaning                                    column
//	HA400     invalid input (a reserved name too)        stream, id, kind, content_type, payload, traceparent or tracestate
//	HA413     payload over the limit                     payload
//	HA409     the id exists with other content           the first that differs: stream, kind, content_type, payload, final
//	HA423     the stream is sealed (journal.ErrSealed)   stream
//	40001     the id was committed after the snapshot (REPEATABLE READ, SERIALIZABLE), or a race: retry the transaction
//	22023     the setting herald.max_payload is not a number of bytes
//
// As any SQL error, these abort the caller's transaction (AppendTx's leave
// it usable); a SAVEPOINT before the call lets it go on. The function runs
// with the caller's privileges (INSERT and SELECT on herald_record, SELECT
// on herald_seq and herald_stream) and its own search_path (pg_catalog and
// the schema it was created in). Its records are numbered as AppendTx's are: by the
// daemon's sequencer within milliseconds, or at the next Due.
//
// # Idle costs nothing, without lost wake-ups
//
// A registration is due when its cursor is at or behind its stream's head,
// but the head lives in herald_stream: no index on registrations alone can
// say which are due, and flipping a flag on every registration of a stream
// at every append would cost one row write per event × receiver, the write
// amplification herald exists to avoid. Instead herald_stream carries a
// pending marker, with a partial index on the pending streams:
//
//   - Writes that can make a registration lag set the marker on the stream
//     row they lock anyway: the sequencer (in the UPDATE that moves the
//     head, at no extra cost), Register, Unpark, Rewind and Skip. Each takes the
//     stream row's lock before touching a registration.
//   - Due reads only pending streams (the partial index) and, through the
//     index (stream, next_seq) WHERE NOT parked, only their registrations
//     whose cursor is at or behind the head. An idle database costs three
//     index probes that find nothing (the sequencer's and these two),
//     however many registrations it holds.
//   - Due also clears the marker of streams where no unparked registration
//     lags, in two statements of one transaction: first it locks those
//     stream rows (FOR NO KEY UPDATE SKIP LOCKED: a stream being sequenced
//     is left pending for the next sweep), then it clears the marker only
//     where, in a snapshot taken after the locks were granted, still no
//     unparked registration lags. Both come after the claim, in one round
//     trip with the commit, so that the sequencer, whose step updates the
//     rows of the streams it numbers, waits for those locks only that long.
//
// Why no wake-up is lost: a write that makes a registration lag holds the
// stream row's lock until it commits. If it committed before the sweep
// locked the row, the second statement's snapshot sees it and the marker
// stays. If it comes after, it waits for the sweep's transaction and then
// sets the marker again. A single statement would not do: under READ
// COMMITTED a row re-checked after a lock wait is judged with subqueries of
// the statement's older snapshot, which may miss a registration that the
// waited-for transaction created. The package's tests race appends against
// sweeps on one stream and check that one more sweep brings every cursor to
// the head.
//
// Parked registrations do not count as lagging; unparking marks the stream.
// A registration in backoff does count: its stream stays pending, and each
// sweep reads it (cost grows with registrations that have work, due now or
// later, never with idle ones).
//
// # Claiming and fencing
//
// Due claims with FOR NO KEY UPDATE SKIP LOCKED and stamps the lease (owner,
// until) and next_attempt_at = at in the same statement, so a second worker
// never gets a registration whose lease is live and never waits for
// another's claim; an expired lease is claimable again, and the least
// recently claimed go first, so a saturated namespace starves no one. It
// looks for Limit+1 rows and stamps only Limit.
//
// A claim's transaction commits without waiting for its WAL flush
// (synchronous_commit off for it alone): what a crash of the database may
// lose of it is a lease, the markers it cleared and a probe's next
// instant, never a record or a cursor. The turn's writes are fenced by the
// lease, so a turn whose claim was lost is refused as if its lease had been
// taken over (push.ErrLeaseLost), and what it sent is sent again, within
// invariant 2's bound (its first cursor write, a synchronous commit, makes
// the claim durable before it: WAL is flushed in order). So the stream
// rows it locks are released at its commit, not a flush later, and its
// turns start sooner.
//
// The writes a worker makes under its claim (Advance, Retry, Park, Complete)
// are fenced by the lease. Each is two statements pipelined in one round
// trip and one implicit transaction (Park and Complete, which also append
// herald's operational event, push.EventsStream, with AppendTx's plain
// INSERT, run the same pipeline in an explicit transaction): the first locks the registration's row
// and reads its lease_owner and its stream's head; the second is the write,
// whose WHERE clause repeats the fence (stream = $1 AND id = $2 AND
// lease_owner = <the claim's owner>, and the cursor at most head+1). A
// write that affects no row is told apart by what the first read under the
// lock: no row is ErrNotFound, another owner push.ErrLeaseLost, else the
// cursor was past head+1 (ErrInvalid). The lock keeps the lease from
// changing in between, and the head only grows, so the verdict and the
// write always agree. Advance is GREATEST(next_seq, n), so racing workers
// never move a cursor back; Retry and Park apply the cursor reached, the
// failure and the evidence (cleaned by push.Evidence.Clean) in one
// statement, so a fenced-out failure stores no evidence; evidence is
// trimmed to the newest push.MaxEvidence rows. AdvanceBatch
// (push.AdvanceBatcher: a worker's group commit) is Advance for many
// claims in one round trip and one commit: the first statement locks their
// rows in key order (two batches never wait on each other in a cycle), the
// second is one fenced UPDATE … FROM unnest that returns the claims it
// applied, and each other claim is told apart as above. Unpark, Skip and Rewind clear
// the lease, so a turn in flight cannot undo them. None of the fenced
// writes touches the stream row or its pending marker: they never make a
// registration lag that was not lagging already.
//
// # Notifications
//
// A sequencer step that numbered records notifies NotifyChannel
// ("herald_append", payload how many) in its own transaction; no appending
// transaction notifies. Listen returns a Listener on a dedicated
// connection.
// RunSequencerWaking also tells its caller after each such step, so that
// herald run wakes its own workers without the notification's round trip
// through the database; that Store's Listeners skip its steps'
// notifications, which other processes still hear.
//
// # Errors
//
// pgx errors are translated here: no pgx or pgconn type is reachable from
// a returned error. A missing row is journal.ErrNotFound with what was
// looked for; a unique violation journal.ErrConflict; a broken or refused
// connection ErrUnavailable (and the pool's connections are reset, so the
// next call reconnects); a serialization failure or deadlock ErrRetry.
// Other failures are an *Error with the server's message and SQLSTATE.
package postgres
