// Package pgtest gives tests a real PostgreSQL server: herald's store tests,
// the CLI's end-to-end tests, benchmarks and chaos harnesses all use it.
//
// # Which server
//
// When HERALD_TEST_DATABASE_URL is set (a postgres:// URL of a role that may
// CREATE DATABASE), tests use that server. Otherwise the harness starts a
// throwaway cluster with initdb and pg_ctl, found on PATH or under
// /usr/lib/postgresql/*/bin, in a temporary directory, listening on a free
// loopback port (127.0.0.1 only), with fsync off (set
// HERALD_TEST_PG_FSYNC=on for durable commits, as benchmarks of commit cost
// want). As root it runs the server as the postgres user, since initdb
// refuses root. Without PostgreSQL binaries it fails, saying how to install
// them (apt-get install postgresql); it never skips.
//
// # Use from a test package
//
// The cluster starts once per test binary, in TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.NewDatabase(t) // a fresh, empty database, dropped after the test
//		...
//	}
//
// A chaos harness restarts the server with Restart(t) (pg_ctl restart -m
// fast; connections break, data survives) or drives a Server from Start
// itself; PgCtl finds the pg_ctl binary.
package pgtest
