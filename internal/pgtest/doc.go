// Package pgtest gives tests a real PostgreSQL server, started once per test
// binary by Main (or Run) in TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// With EnvURL set, tests use that server. Otherwise Start runs a throwaway
// cluster (initdb, pg_ctl from PATH or the newest /usr/lib/postgresql/*/bin)
// in a temporary directory on a free 127.0.0.1 port, fsync off unless
// EnvFsync is "on", as the postgres user when run as root. Without the
// binaries it fails, saying how to install them; it never skips.
package pgtest
