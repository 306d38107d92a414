// Package chaos is herald's fault-injection harness: it drives the real
// herald binary, built by the test, against a real PostgreSQL (internal/
// pgtest) and real HTTP receivers on loopback, injects the faults that
// happen in production, and checks afterwards that nothing was lost. See
// RELIABILITY.md at the repository root for what each scenario tries, the
// figures of the last long run and how to rerun it.
//
// # Scenarios
//
//   - TestDaemonsWithDefaultsDeliverEverythingThroughKills: the operator's
//     trial: three `herald run` daemons with default flags (they share the
//     default addresses) deliver 20,000 records to one receiver host while
//     30 SIGKILLs hit them; all within 60 s of the last kill, in order.
//   - TestDaemonMemoryIsBoundedByPageBytes: one `herald run` with default
//     flags on SQLite delivers 4 streams (16 in long mode) of 64 records of
//     1 MB to one fast receiver with its peak resident memory under 200 MiB.
//   - TestChaosCrash: several `herald run` worker processes share one
//     database while the harness sends SIGKILL to a random worker at random
//     instants and restarts it; the registrations have windows 1, 4 and 16.
//     Afterwards every record reached its receiver; record N+W was never
//     sent before N was acknowledged, each turn's records arrived in order
//     within its window (strict order for window 1), at most one drain page
//     of duplicates per registration per kill, and no cursor ahead of what
//     its receiver acknowledged.
//   - TestChaosFaultyReceivers: receivers answer 2xx, 500, 503 and 429 with
//     Retry-After (seconds and HTTP-date), 410, time out, reset the
//     connection, dribble their bodies, send 10 MB bodies, echo the request
//     headers, and redirect to private addresses. Afterwards every record is
//     delivered or its registration parked with evidence that says why.
//   - TestChaosPostgresRestart: the database is restarted (pg_ctl restart
//     -m fast) under load; the daemons keep running, log the outage and
//     resume by themselves, losing nothing.
//   - TestChaosHostileInput: more than fifty hostile inputs through the
//     command line, each refused with a clear error and no change, and the
//     addresses the network guard refuses at delivery, each parked with the
//     guard's evidence and never connected to.
//
// Every scenario searches every log line and every --json output it
// produced for the secrets it used (webhook secrets, bearer tokens, the
// admin token) and fails if one is found.
//
// # Modes
//
// HERALD_CHAOS selects the size: unset or "short" is the mode `go test
// ./...` runs (CI: a few thousand records, about ten kills, well under two
// minutes in all); "long" is the full run for people (4 workers, 100,000
// records across 1,000 registrations, 300 kills):
//
//	HERALD_CHAOS=long go test -run Chaos -timeout 2h -v ./internal/chaos
//
// Randomness (kill instants, victims, receivers' answers) comes from one
// seed, printed by every run and on failure; HERALD_CHAOS_SEED=<n> replays
// a run's plan (the interleaving with the operating system's scheduling
// differs, the plan does not). HERALD_CHAOS_REPORT=<file> writes the
// figures of each scenario as JSON lines, for RELIABILITY.md.
//
// A bug the harness finds gets a regression test of its own here (such as
// TestTurnsStayInsideTheirLease) once it is fixed.
//
// The harness waits on counters and signals (deliveries seen by the
// receivers, lines logged by the daemons, processes exiting), never on
// sleeps; the one place it moves time is `herald sweep --at`, an explicit
// instant.
package chaos
