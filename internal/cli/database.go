package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
)

// defaultDatabase is the embedded default: one SQLite file beside the user.
const defaultDatabase = "sqlite:./herald.db"

// backend is what a command works on: the journal and the push store over one
// database.
type backend interface {
	journal.Journal
	push.Store
	Close() error
}

// database is a parsed --database value.
type database struct {
	kind string // "sqlite" or "postgres"
	path string // sqlite: the file
	url  string // postgres: the connection URL
}

func parseDatabase(s string) (database, error) {
	switch {
	case strings.HasPrefix(s, "sqlite:"):
		p := strings.TrimPrefix(s, "sqlite:")
		if p == "" {
			return database{}, usagef("--database sqlite: needs a path, e.g. sqlite:./herald.db")
		}
		return database{kind: "sqlite", path: p}, nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		return database{kind: "postgres", url: s}, nil
	case s == "":
		return database{}, usagef("--database is empty: give sqlite:PATH or a postgres:// URL")
	}
	return database{}, usagef("--database %q: give sqlite:PATH (e.g. sqlite:./herald.db) or a postgres:// URL", redactDSN(s))
}

// String names the database without a password.
func (d database) String() string {
	if d.kind == "sqlite" {
		return "sqlite:" + d.path
	}
	return redactDSN(d.url)
}

// redactDSN hides the password of a connection URL.
func redactDSN(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok {
		return s
	}
	if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
		return scheme + "://" + user + ":xxxxx@" + host
	}
	return s
}

// open opens the --database for a command. SQLite files are created and
// migrated on first use (the embedded default must just work); PostgreSQL
// must be migrated with `herald migrate up` first.
func (e *env) open(ctx context.Context) (backend, error) {
	d, err := parseDatabase(e.database)
	if err != nil {
		return nil, err
	}
	var b backend
	switch d.kind {
	case "sqlite":
		b, err = sqlite.Open(ctx, d.path)
	default:
		b, err = openPostgres(ctx, d.url)
	}
	if err != nil {
		return nil, openError(d, err)
	}
	return b, nil
}

func openError(d database, err error) error {
	var hint string
	switch {
	case errors.Is(err, store.ErrSchemaBehind):
		hint = "run: herald migrate up --database " + d.String()
	case errors.Is(err, store.ErrSchemaAhead):
		hint = "this herald is older than the database: upgrade herald"
	case errors.Is(err, store.ErrNotHerald):
		hint = "point --database at a herald database, or at a new file"
	case errors.Is(err, store.ErrSchemaDirty):
		hint = "a migration did not finish: check the schema, record its version as the error says, then run herald migrate up"
	}
	if hint != "" {
		return fmt.Errorf("cannot use database %s: %w\n%s", d, err, hint)
	}
	return fmt.Errorf("cannot open database %s: %w", d, err)
}
