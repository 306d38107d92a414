// Package postgres is herald's production store: a journal.Journal and a
// store.Store over one PostgreSQL database (pgx/v5, pgxpool), shared by any
// number of worker processes on any number of hosts.
//
//	const url = "postgres://herald@db.example/herald"
//	_, err := postgres.MigrateUp(ctx, url) // herald migrate up
//	s, err := postgres.Open(ctx, url)      // checks the schema version
//
// Open and New refuse, changing nothing, a database whose schema is not this
// binary's. The schema is migrations/001_init.up.sql, embedded and run by
// internal/migrate, each migration in one transaction with its row in
// herald_schema_migrations (golang-migrate's shape), under an advisory lock.
//
// # Appending
//
// A global sequence would let a reader see seq 6 of a transaction that
// committed before the one holding seq 5, and never see 5; a per-stream lock
// held to the appender's commit, or a NOTIFY in its transaction, throttles
// the application's own writes. So Append and AppendTx only insert into
// herald_record, whose rows are never updated: each carries its
// transaction's id (xid8) and its insertion order (pos). AppendTx's one
// entry, and herald_append's usual one, is one INSERT … WHERE the stream is
// not sealed ON CONFLICT (id) DO NOTHING; a batch, an entry that insert did
// not take, Append and herald_append's other entries call one SQL function,
// herald_append_rows ("Appending from SQL"), whose insert checks the seal
// and that no id is stored in the same statement, so idempotency
// (journal.Digest), conflicts and sealing are decided in the appending
// transaction. A concurrent append of the same new id waits on the primary
// key for that id only, and is then decided as above (a batch is
// all-or-nothing: what it inserted is deleted before it decides).
//
// One sequencer at a time, elected by herald_sequencer's row lock (not an
// advisory lock, which any role may take), numbers the records by
// snapshots, as PgQ batches events. herald_sequencer keeps
// done, a snapshot whose committed transactions' records are all numbered.
// A step is one READ COMMITTED transaction in one round trip: the lock, then
// one statement whose own snapshot is the window: it gives the records of
// the transactions that committed in the window and not in done, per stream
// in (xid, pos) order, the seqs head+1… in herald_seq, moves the heads, sets
// the pending markers, notifies once, and makes the window done. Readers see
// numbered records only. So invariant 4 holds: a record is numbered only
// once committed, and one that commits after a window is numbered by a
// later step, after all that step numbered. A step that dies leaves nothing
// behind, and a long transaction delays only its own records. A step
// numbers at most 10,000 records; a full page leaves the window open for the
// next.
//
// RunSequencer (herald run) steps every 5 to 10 ms while records come and
// every 100 ms when none do. Due runs a step first unless this Store runs
// RunSequencer, so scheduler mode needs no daemon. Until a step numbers
// them, records are not lost from sight: Stats and Streams count them
// (store.Unnumbered, from the sequencer's work list, off the append path),
// Lookup names one (*journal.UnnumberedError), and a conflict with one says
// it waits where it would give its seq.
//
// # Sealing
//
// An append to a stream that holds a committed final record, numbered or
// not, is refused (*journal.SealedError, FinalSeq 0 while it has no seq).
// The check is one probe of an index of the final records (its cost:
// BENCHMARKS.md, section 1). Two transactions that append to one stream,
// one of them a final record, can both pass that check and commit. If one
// step numbers both, the final record goes last.
// If the other commits after the final record was numbered, the step
// refuses it: it gets no seq, is never read nor delivered, and stays with
// the reason in herald_seq (Refused); appending its id again is ErrSealed,
// and Append, which waits for its records' seqs, returns ErrSealed for it.
// So is a second final record, and an append to a sealed stream whose final
// record retention pruned while a younger refused record keeps the stream.
//
// # Appending from SQL: herald_append
//
// herald_append is AppendTx for an application in any language, by the same
// path, with the same checks, digest, idempotency and sealing: an entry
// appended from Go and from SQL is one record (README, "From other
// languages").
//
//	SELECT herald_append('orders/1', 'evt-1', 'order.created', '{"total":42}'::jsonb);
//
//	herald_append(stream text, id text, kind text, payload P,
//	              content_type text DEFAULT D, final boolean DEFAULT false,
//	              traceparent text DEFAULT NULL, tracestate text DEFAULT NULL) RETURNS text
//
// P and D: jsonb or json, application/json; text (and an untyped literal),
// text/plain; charset=utf-8; bytea, application/octet-stream. The payload is
// bytea's bytes, text's in UTF-8, json's text as given, jsonb's text form
// ({"total": 42}). A NULL content type or final is the default; an empty
// content type is application/json. It returns the id, for a new record and
// for a repeat of a stored one. Lengths are UTF-8 bytes; the payload limit
// is the setting herald.max_payload, else journal.DefaultMaxPayload. Errors
// carry Go's message and the field in the error's column:
//
//	SQLSTATE  meaning                                    column
//	HA400     invalid input, reserved names too          stream, id, kind, content_type, payload, traceparent or tracestate
//	HA413     payload over the limit                     payload
//	HA409     the id exists with other content           the first that differs: stream, kind, content_type, payload, final
//	HA423     the stream is sealed (journal.ErrSealed)   stream
//	40001     the id was committed after the snapshot (REPEATABLE READ, SERIALIZABLE), or a race: retry the transaction
//	22023     the setting herald.max_payload is not a number of bytes
//
// They abort the caller's transaction.
//
// herald_append's usual entry is AppendTx's: the same plain insert, as the
// caller, once herald_usual_entry (the migration: printable ASCII names,
// none reserved, a bare type/subtype, a plain trace context or none, the
// default payload limit) and, under a JSON type, a parse of the payload say
// Go would accept it; the table's checks and trigger fence it as they fence
// AppendTx's. An entry that insert did not take (a repeat, a conflict, a
// sealed stream) and every other entry go to herald_append_rows, which
// checks with Go's errors and decides, so that every error is as before.
//
// herald_append and AppendTx (but their usual entries) append through
// herald_append_rows(stream, ids, kinds, content_types, payloads, finals,
// traceparents, tracestates, appended_at), which runs as the schema's owner
// (SECURITY DEFINER, its search_path pg_catalog, its schema, then pg_temp).
// A producer's role holds EXECUTE on it, INSERT on herald_record's columns
// but xid and pos, and SELECT on herald_sealed (README, "Producers'
// grants"); the table's check constraints and its trigger
// herald_record_reserved refuse what a hand-written insert could forge (a
// reserved stream or id, control characters, a content type that is not
// type/subtype, non-JSON under a JSON type), never more strictly than Go.
// herald_append_rows checks each entry again, whoever calls it: a
// one-expression test passes the usual entry (printable ASCII names, a bare
// type/subtype, no trace context), and anything else goes through the
// checks that give Go's errors; a JSON payload is cast to json. It refuses
// a herald/ stream and a herald-event: id unless the session's user is a
// member of the owner (herald, appending its own events), computes the
// digest itself, and writes no column but the entries' (the xid is the
// appending transaction's). It decides without raising, so that AppendTx's
// refusal leaves the transaction usable: 'ok' (with the stored records'
// seqs when some were), 'conflict', 'sealed' or 'raced'. Only Go's
// journal.ValidateEntries decides what is valid; the SQL checks must agree
// with it, which TestHeraldAppendChecksAsGo and its neighbours prove case
// by case.
//
// # Idle costs nothing, without lost wake-ups
//
// A registration is due when its cursor is at or behind its stream's head;
// rather than flag every registration at every append, herald_stream carries
// a pending marker, with a partial index on the pending streams:
//
//   - Writes that can make a registration lag set it on the stream row they
//     lock first: the sequencer (in the UPDATE that moves the head),
//     Register (Update too), Unpark, Rewind and Skip.
//   - Due reads only pending streams and, through the index
//     herald_registration_claim (stream, next_seq, …) WHERE NOT parked,
//     their registrations at or behind the head: an idle database costs
//     three index probes that find nothing.
//   - Due clears the marker of streams where no unparked registration lags,
//     in two statements: the first locks those stream rows (SKIP LOCKED), the
//     second clears the marker where, in its snapshot taken after the locks,
//     still none lags. They go last, with the commit.
//
// A write that makes a registration lag holds the stream row's lock until it
// commits: if it committed before the sweep locked the row, the second
// statement sees it; if after, it sets the marker again. One statement would
// not do: under READ COMMITTED a row re-checked after a lock wait is judged
// with subqueries of the older snapshot. Parked registrations do not count
// as lagging; one in backoff does.
//
// # Claiming and fencing
//
// A claim reads what it takes, not every registration due (issue 37: a
// fan-out of N would cost N² row visits). herald_registration_claim orders
// a stream's unparked registrations by (next_seq, namespace,
// next_attempt_at, id), so Due's pick (statement pick) finds the cursors at or
// behind the head by a loose scan, one probe each, and reads each cursor's
// registrations in claim order, the first 4 per registration it may take.
// Go applies the per-host cap and a held host's one probe to the rows read,
// up to where a cursor's read stopped; with fewer than Limit+1 fitting
// there, it reads 8 times as deep. So a claim costs its Limit, the rows the
// cap and held hosts pass over, and one probe per distinct cursor.
//
// Due then claims the picks in order with FOR NO KEY UPDATE SKIP LOCKED,
// checking again that each is due, unleased and lagging, and stamps the
// lease and next_attempt_at = at in the same statement, so a second worker
// never gets a live lease nor waits for another's claim, and the least
// recently claimed go first. Its commit does not wait for the WAL flush: a
// crash of the database loses at most a lease, cleared markers and a
// probe's instant.
//
// The writes under a claim (Advance, Checkpoint, Retry, Park, Complete,
// HostFailed, AdvanceBatch) are fenced by the lease: a first statement of the
// write's transaction locks the registration's row and reads its lease owner
// and its stream's head, and the write repeats the fence in its WHERE clause.
// One that did not apply is told apart by what the first read: no row
// (journal.ErrNotFound), another owner (store.ErrLeaseLost), else a cursor
// past head+1 (journal.ErrInvalid). Cursors move by GREATEST, so racing
// workers never move one back; a failure and its evidence are one statement,
// so a fenced-out failure stores none; herald's events commit with their
// change. None of these writes touches the stream row. Unpark, Skip and
// Rewind clear the lease, so a turn in flight cannot undo them.
//
// # Where the rules live
//
// The statements are in sql/*.sql (but the migration runner's few, in
// queries.go), embedded and loaded once (internal/sqlfile): each under a line
// "-- name: x", with named parameters (@stream) passed as pgx.NamedArgs,
// each planner fence (OFFSET 0, MATERIALIZED) with a comment saying which
// plan it prevents. A rule that several statements apply is written once,
// as a template the statements take in:
//
//   - a moved cursor resets the attempts, the host failures and the last
//     error: sql/rules.sql, cursor_moved (advance, checkpoint,
//     advance_batch); a failure's own counts in retry, park and host_failed
//     (sql/cursor.sql), store.ChargeHost's in Go;
//   - the fence of a write under a claim: sql/rules.sql, fenced_by;
//   - an evidence row: sql/rules.sql, insert_evidence;
//   - a registration's status columns, a host's: status and host in
//     sql/registrations.sql and sql/hosts.sql;
//   - no registration lagging (the pending markers' sweep): none_lagging in
//     sql/due.sql;
//   - the records waiting for the sequencer, and a window's:
//     waiting_running, waiting_new and in_window in sql/sequencer.sql;
//   - a valid entry: journal.ValidateEntries; herald_append_rows (the
//     migration) checks the same, the cases of TestHeraldAppendChecksAsGo
//     and its neighbours fed to both;
//   - the append itself (idempotency, conflicts, sealing): herald_append_rows,
//     for AppendTx and herald_append alike;
//   - the per-host cap and a held host's one probe: store.DuePicker, in Go,
//     over the rows statement pick reads.
//
// # Errors
//
// No pgx or pgconn type is reachable from a returned error. A missing row is
// journal.ErrNotFound naming what was looked for; a unique violation
// journal.ErrConflict; a broken or refused connection ErrUnavailable; a
// serialization failure or deadlock ErrRetry; other failures an *Error with
// the server's message and SQLSTATE.
package postgres
