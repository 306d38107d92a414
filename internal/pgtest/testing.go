package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store/postgres"
)

// shared is the server Run started for this test binary.
var shared *Server

// Main exits with Run's code.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run starts the server, runs the tests, stops it and returns the exit code:
// 2, with the reason on stderr, when no server can be had.
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

// Shared returns the server Run started, failing tb if TestMain did not.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	if shared == nil {
		tb.Fatal("pgtest: no server: the package's TestMain must call pgtest.Main(m)")
	}
	return shared
}

var databases atomic.Int64

// NewDatabase returns the URL of a fresh, empty database on the shared
// server, dropped (its connections terminated) when the test ends.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	return createDatabase(tb, "")
}

// CopyDatabase returns the URL of a fresh database copied from the one at
// templateURL (a URL NewDatabase returned, on which no connection is open:
// PostgreSQL copies only a database nobody uses), dropped when the test
// ends. Copying a migrated database is one statement where a migration is
// hundreds, so a suite of many tests, each on a database of its own,
// migrates once.
func CopyDatabase(tb testing.TB, templateURL string) string {
	tb.Helper()
	u, err := url.Parse(templateURL)
	if err != nil || strings.Trim(u.Path, "/") == "" {
		tb.Fatalf("pgtest: copy database: %q is not a URL NewDatabase returned", templateURL)
	}
	return createDatabase(tb, strings.Trim(u.Path, "/"))
}

// createDatabase creates a database, a copy of template unless it is "".
func createDatabase(tb testing.TB, template string) string {
	tb.Helper()
	srv := Shared(tb)
	name := fmt.Sprintf("herald_test_%d_%d", os.Getpid(), databases.Add(1))
	create := "CREATE DATABASE " + name
	if template != "" {
		create += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if err := srv.exec(context.Background(), create); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if err := srv.exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return srv.databaseURL(name)
}

// NewStore opens a store/postgres Store on a fresh, migrated database; it is
// closed when the test ends, before the database is dropped.
func NewStore(tb testing.TB) *postgres.Store {
	tb.Helper()
	url := NewDatabase(tb)
	if _, err := postgres.MigrateUp(context.Background(), url); err != nil {
		tb.Fatalf("pgtest: migrate up: %v", err)
	}
	s, err := postgres.Open(context.Background(), url, postgres.WithKeyring(seal.Generate()))
	if err != nil {
		tb.Fatalf("pgtest: open the store: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// Restart restarts the shared server (Server.Restart), failing tb on error.
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

// AppendUnnumbered commits entries to stream with AppendTx in a transaction
// of their own, as an application does, and leaves them for the sequencer:
// until a sweep or a daemon runs, they wait to be numbered.
func AppendUnnumbered(tb testing.TB, s *postgres.Store, stream string, entries ...journal.Entry) {
	tb.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		_, err := s.AppendTx(ctx, tx, stream, entries...)
		return err
	})
	if err != nil {
		tb.Fatalf("pgtest: append to %s: %v", stream, err)
	}
}

// Backlog is a fresh store (NewStore) in which "billing" is a webhook
// registration on stream orders/1 and two records of it, evt-1 and evt-2,
// wait to be numbered (AppendUnnumbered).
func Backlog(tb testing.TB) *postgres.Store {
	tb.Helper()
	s := NewStore(tb)
	if _, err := s.Register(context.Background(), push.Registration{Stream: "orders/1", ID: "billing", Namespace: "webhook", URL: "https://billing.example/"}); err != nil {
		tb.Fatalf("pgtest: register billing: %v", err)
	}
	AppendUnnumbered(tb, s, "orders/1", journal.Entry{ID: "evt-1", Kind: "k", Payload: []byte(`{}`)}, journal.Entry{ID: "evt-2", Kind: "k", Payload: []byte(`{}`)})
	return s
}

// Dump returns pg_dump's plain SQL of the database at url, every table's
// rows included, failing tb if it cannot: pg_dump beside the server's
// pg_ctl (the file it links to), or on PATH for an external server.
func Dump(tb testing.TB, url string) []byte {
	tb.Helper()
	srv := Shared(tb)
	bin := "pg_dump"
	if srv.bin != "" { // pg_ctl may be a link to the server's binaries
		pgctl, err := filepath.EvalSymlinks(filepath.Join(srv.bin, "pg_ctl"))
		if err != nil {
			tb.Fatalf("pgtest: pg_dump: %v", err)
		}
		bin = filepath.Join(filepath.Dir(pgctl), "pg_dump")
	}
	out, err := exec.Command(bin, "--dbname="+url, "--no-owner").Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		tb.Fatalf("pgtest: %s: %v\n%s", bin, err, stderr)
	}
	return out
}
