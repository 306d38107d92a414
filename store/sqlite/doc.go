// Package sqlite is herald's store in one SQLite file: a journal.Journal and
// a push.Store over the same database, built on modernc.org/sqlite (pure Go,
// no cgo). It is the CLI's default (`--database sqlite:./herald.db`), for
// running herald with no server at all. Several processes may share the file
// (a `herald unpark` beside a daemon, or two daemons): they take turns at its
// one write lock, and Due stamps leases inside it, so no two deliver to one
// registration while a lease is live. A second process adds availability,
// not throughput. It passes store/storetest.
//
//	s, err := sqlite.Open(ctx, "herald.db")
//	if err != nil { … }
//	defer s.Close()
//	w, err := push.NewWorker(s, s, transport, projection)
//
// # Tables
//
// The schema is parallel to store/postgres: herald_stream (one row per
// stream: head, sealed, wake_at), herald_record (one row per record, with the
// journal.Digest of its content for idempotent appends), herald_registration
// (destination, cursor, retry state, lease), herald_evidence (at most
// push.MaxEvidence rows per registration, the newest) and herald_host (host
// health: hosts.go). Instants are unix
// nanoseconds in INTEGER columns (full Go precision, returned in UTC); the
// zero time is NULL.
//
// # Durability
//
// The database runs in WAL mode with synchronous=FULL: every commit (an
// append, a cursor move) is fsynced to the write-ahead log before the call
// returns. With synchronous=NORMAL a process crash still loses nothing, but a
// power loss or kernel panic can roll back the last transactions; a rolled
// back cursor would only repeat deliveries, but a rolled back append would
// lose a record the application was told is stored, which breaks herald's
// first invariant (no loss). FULL costs one fsync per transaction; callers
// who append often should batch entries into one Append (see BENCHMARKS.md).
//
// # Concurrency
//
// All writes go through one connection, in BEGIN IMMEDIATE transactions:
// goroutines queue for that connection (database/sql's pool of one), so in one
// process writers never contend for SQLite's lock and no "database is locked"
// error can arise. Reads (Read, Head, Lookup, Get, List, Evidence, Stats) use a
// pool of query_only connections that WAL lets run beside the writer; each
// sees every transaction committed before it began. A second process waits
// for the write lock up to a busy timeout of 10 s, then gets ErrBusy.
//
// Seqs are assigned inside the appending transaction from herald_stream.head,
// under that single write lock, so they are gapless and commit-ordered
// (a global sequence would let a reader pass a late commit). Due claims and stamps leases in
// one write transaction, so a lease is exclusive across goroutines and across
// processes; Advance, Retry and Park apply the cursor with MAX(next_seq, n) in
// the same statement that releases the lease.
//
// # Idle costs nothing
//
// herald_stream.wake_at keeps idle registrations out of Due without touching
// them: it is NULL when no unparked registration of the stream lags its head,
// and otherwise no later than the earliest instant one of them may be due.
// Due joins only streams whose wake_at has come (a partial index), so its cost
// follows the streams with due work, not the registrations in the table.
//
//   - Append sets wake_at to the smallest integer (due at once) in the
//     stream row it already writes, when the stream has registrations.
//   - Register, Advance, Retry, Unpark, Skip and Rewind only ever lower it, to
//     the instant the registration they changed becomes due, if it lags.
//   - Due, after claiming, recomputes it for every stream it looked at: the
//     earliest due instant of a lagging unparked registration (a claimed one
//     at its lease's end), or NULL when none lags. A stream whose
//     registrations all caught up costs one more look, then none.
//
// The lost wake-up (a sweep that clears the marker while an append that set it
// commits) cannot happen: the recompute reads the heads and writes the markers
// inside the write transaction, and every append takes the same write lock, in
// this process and in any other. An append either committed before the
// recompute read its head, or sets the marker after the recompute committed.
//
// # Migrations
//
// The schema is versioned by numbered, reversible migrations embedded in the
// binary (migrations/NNN_name.up.sql and .down.sql, the layout store/postgres
// shares), run by internal/migrate: each in one BEGIN IMMEDIATE transaction
// together with its row in schema_migrations (version, dirty: golang-migrate's
// shape). PRAGMA application_id marks the file as herald's. Open
// creates and migrates a new or empty file, and migrates an older herald
// database up at once (the embedded default must just work), unless given
// WithoutMigrating, which refuses both and changes nothing; MigrateUp,
// MigrateDown (one step) and MigrationStatus are the CLI's `herald
// migrate`. A call with nothing to do writes nothing.
//
// A migration takes the write lock, which holds across processes, and reads
// the version under it: two processes migrating at once take turns and
// apply each migration once; a migration waits up to the busy timeout for
// another process's write, then fails with ErrBusy. A migration that fails
// rolls back with its version row: the file stays wholly at the version
// before.
//
// # Refusals
//
// Open, MigrateUp and MigrateDown change nothing, and return an error, for a
// file that is not SQLite, holds another application's tables or has another
// application id, or herald's id and tables without schema_migrations
// (store.ErrNotHerald), a database migrated by a newer herald
// (store.ErrSchemaAhead), one whose version is marked dirty (ErrSchemaDirty:
// a migration began and did not record its end; the error names the
// version and the statement that settles it), a directory, or a file that
// cannot be read. The checks read the file header and then use a read-only
// connection; a migration checks again under the write lock.
//
// # Errors
//
// Driver errors are translated here: journal's sentinels where they apply
// (ErrNotFound, ErrConflict, ErrInvalid, ErrSealed), ErrBusy for a lock held
// by another process past the busy timeout, store.ErrNotHerald for a file
// SQLite cannot read as a database; otherwise an error that names the
// operation and keeps the driver's message as text. No modernc.org/sqlite
// type is returned; a failed migration's error names the migration and
// keeps the driver's message, not the migration's SQL.
package sqlite
