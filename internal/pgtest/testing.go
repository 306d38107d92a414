package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/store/postgres"
)

// shared is the server Main started for this test binary.
var shared *Server

// Main starts the server once for the test binary, runs the tests and stops
// it. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// If no server can be had, it prints why (and how to install PostgreSQL)
// and exits with status 2: the tests fail, they are never skipped.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain that has more to do after the tests: it
// returns the exit code instead of exiting.
func Run(m *testing.M) int {
	srv, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	shared = srv
	code := m.Run()
	if err := srv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Shared returns the server Main started. It fails tb if the package's
// TestMain did not call Main.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	if shared == nil {
		tb.Fatal("pgtest: no server: the package's TestMain must call pgtest.Main(m)")
	}
	return shared
}

var databases atomic.Int64

// NewDatabase creates a fresh, empty database on the shared server and
// returns its URL. The database is dropped when the test ends (connections
// still open to it are terminated).
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	srv := Shared(tb)
	name := fmt.Sprintf("herald_test_%d_%d", os.Getpid(), databases.Add(1))
	if err := srv.exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if err := srv.exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := srv.databaseURL(name)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// NewStore opens a store/postgres Store on a fresh database (NewDatabase),
// migrated up; it is closed when the test ends, before the database is
// dropped.
func NewStore(tb testing.TB) *postgres.Store {
	tb.Helper()
	url := NewDatabase(tb)
	if _, err := postgres.MigrateUp(context.Background(), url); err != nil {
		tb.Fatalf("pgtest: migrate up: %v", err)
	}
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		tb.Fatalf("pgtest: open the store: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// Restart restarts the shared server (pg_ctl restart -m fast): every
// connection breaks and committed data survives. It fails tb for an
// external server.
func Restart(tb testing.TB) {
	tb.Helper()
	if err := Shared(tb).Restart(); err != nil {
		tb.Fatal(err)
	}
}

// exec runs one statement on the maintenance database.
func (s *Server) exec(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}
