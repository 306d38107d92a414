// Package sqlite is herald's store in one SQLite file (modernc.org/sqlite,
// pure Go, no cgo): the CLI's default (`--database sqlite:./herald.db`), for
// running herald with no server at all. It passes store/storetest.
//
//	s, err := sqlite.Open(ctx, "herald.db")
//	if err != nil { … }
//	defer s.Close()
//	w, err := push.NewWorker(s, s, transport, projection)
//
// The tables (migrations/001_init.up.sql) are store/postgres's. Instants are
// unix nanoseconds in INTEGER columns (full Go precision, read back in UTC);
// the zero time is NULL.
//
// # Durability
//
// WAL mode with synchronous=FULL: every commit is fsynced before the call
// returns (NORMAL could lose an acknowledged append to a power loss). Callers
// who append often batch entries into one Append (BENCHMARKS.md).
//
// # Concurrency
//
// Every write runs on one connection, in a BEGIN IMMEDIATE transaction:
// goroutines queue for it, so in one process no "database is locked" error
// can arise. Reads use a pool of query_only connections beside the writer.
// Several processes may share the file (a `herald unpark` beside a daemon):
// they take turns at its write lock, waiting up to 10 s before ErrBusy. Seqs
// are assigned from herald_stream.head under that lock, so they are gapless
// and commit-ordered; Due stamps leases under it, so a lease is exclusive
// across processes.
//
// # Idle costs nothing
//
// herald_stream.wake_at keeps idle registrations out of Due without touching
// them: NULL when no unparked registration of the stream lags its head, else
// no later than the earliest instant one may be due. Due reads only streams
// whose wake_at has come (a partial index) and recomputes it for them, from
// one index probe per lagging cursor, per stream and per held host, never
// from the registrations that wait (wakeMarker); Append
// sets it to the smallest integer (due at once) when the stream has
// registrations; other writes only lower it. Due reads the heads under the
// write lock, so no wake-up is lost. Within a woken stream it reads each
// lagging cursor's due registrations a few at a time, in claim order, from
// one index (herald_registration_due): a claim reads what it takes and what
// the per-host cap passes over, never a registration at the head.
//
// # Migrations and refusals
//
// Migrations are embedded and run by internal/migrate, each in one BEGIN
// IMMEDIATE transaction; PRAGMA application_id marks the file as herald's.
// Open migrates up unless given WithoutMigrating; MigrateUp, MigrateDown and
// MigrationStatus are `herald migrate`. Open, MigrateUp and MigrateDown
// change nothing, and return an error, for a file that is not SQLite, holds
// another application's tables or id, or herald's id and tables without
// schema_migrations (store.ErrNotHerald); a newer schema
// (store.ErrSchemaAhead); a dirty one (store.ErrSchemaDirty, naming the
// statement that settles it).
//
// Driver errors are translated at this boundary: journal's sentinels where
// they apply, ErrBusy, store.ErrNotHerald for a file SQLite cannot read; else
// an error naming the operation, with the driver's message as text.
package sqlite
