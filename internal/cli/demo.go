package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/demo"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/transport"
)

func newDemo(e *env) command {
	var (
		duration time.Duration
		corpus   string
		in       *demo.Input
	)
	return command{
		use:   "demo",
		short: "Show herald's whole job on this machine: local receivers, every wire, a 503, a 410, a recovery",
		long: `Show herald's whole job in one command, with no server to install: receivers on
loopback that verify what they get with real libraries' receiving side
(ActivityPub HTTP signatures, CloudEvents, A2A, Standard Webhooks), one that
answers 503 with Retry-After a few times, one that answers 410 Gone and one that
is down; records of every wire; a worker per namespace until everything is
delivered or parked; then an unpark, and the receiver that came back catching up.

The input is an embedded example set, or with --corpus a directory laid out as
the repository's testdata/corpus. The database is a fresh SQLite file, removed
at the end, unless --database names one (it must be empty: the demo's workers
would deliver its other registrations too); HERALD_DATABASE_URL is not used.

Exit 0 when every receiver verified everything it was sent and the 410
receiver's registration is parked with its cursor intact; 1 otherwise.`,
		example: `  herald demo
  herald demo --corpus testdata/corpus
  herald demo --json --database sqlite:demo.db`,
		flags: func(f *pflag.FlagSet) {
			f.DurationVar(&duration, "duration", demo.DefaultDuration, "give up (and exit 1) when the demo has not finished in this time")
			f.StringVar(&corpus, "corpus", "", "deliver this directory (laid out as testdata/corpus) instead of the embedded examples")
		},
		check: func(*call) (err error) {
			if duration <= 0 {
				return usagef("--duration %v must be positive", duration)
			}
			if corpus == "" {
				in, err = demo.Examples()
				return err
			}
			if in, err = demo.Corpus(corpus); err != nil {
				return usageError{err}
			}
			return nil
		},
		run: func(c *call) error {
			database := ""
			if c.changed("database") {
				database = e.database
			}
			return e.runDemo(c.ctx(), database, in, duration)
		},
	}
}

// runDemo opens the database (a fresh SQLite file when database is empty),
// runs the demo and prints its summary.
func (e *env) runDemo(ctx context.Context, database string, in *demo.Input, duration time.Duration) error {
	shown := database
	if database == "" {
		dir, err := os.MkdirTemp("", "herald-demo-")
		if err != nil {
			return fmt.Errorf("create a temporary directory for the demo's database: %w", err)
		}
		defer os.RemoveAll(dir)
		database = "sqlite:" + filepath.Join(dir, "herald.db")
		shown = "a fresh SQLite database (removed at the end)"
	}
	e.database = database
	b, err := e.openDemo(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if shown == database {
		shown = "the database " + redactDSN(database)
	}

	logger := slog.New(slog.DiscardHandler)
	if e.verbose {
		logger = e.logger
	}
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: 10 * time.Second, Logger: logger})
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	cfg := demo.Config{Journal: b, Store: b, Transport: tr, Input: in, Database: shown, Duration: duration,
		Out: e.Out, Progress: e.Err, Logger: logger,
		ShowRegistrations: func(w io.Writer, sts []push.Status) error {
			ew := &errWriter{w: w}
			printRegistrations(ew, operator.Held(nil).Views(sts))
			return ew.err
		}}
	if e.json {
		cfg.Out, cfg.Progress = io.Discard, nil
	}
	sum, err := demo.Run(ctx, cfg)
	if errors.Is(err, demo.ErrNotEmpty) {
		return usageError{err} // a --database in use: a bad value, nothing changed
	}
	if err != nil {
		return err
	}
	if e.json {
		if err := printJSON(e.Out, sum); err != nil {
			return err
		}
	}
	if !sum.OK {
		return &exitError{code: ExitError, err: fmt.Errorf("demo failed: %s", strings.Join(sum.Failures, "; "))}
	}
	return nil
}

// openDemo opens the demo's database, migrating a PostgreSQL database
// without any herald schema (one with an older schema is left to herald
// migrate up).
func (e *env) openDemo(ctx context.Context) (backend, error) {
	b, err := e.open(ctx, createDB)
	if err == nil || !errors.Is(err, store.ErrSchemaBehind) {
		return b, err
	}
	d, perr := parseDatabase(e.databaseFrom, e.database)
	if perr != nil || d.kind != "postgres" {
		return nil, err
	}
	st, serr := migrate(ctx, d, "status")
	if serr != nil || st.Current != 0 {
		return nil, err
	}
	if _, merr := migrate(ctx, d, "up"); merr != nil {
		return nil, fmt.Errorf("migrate up %s for the demo: %w", d, merr)
	}
	return e.open(ctx, createDB)
}
