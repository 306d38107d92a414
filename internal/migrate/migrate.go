// Package migrate runs the SQL stores' schema migrations: embedded files
// NNN_name.up.sql and NNN_name.down.sql, numbered 001..n without gaps, each
// run in one transaction with the version it records, which the store begins
// under a lock that holds across processes. The version table has
// golang-migrate's shape (one row: version, dirty; none at version 0); this
// runner never sets dirty, and refuses a version marked so.
package migrate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/heraldpush/herald/store"
)

// File is one migration: its version, its name, and the SQL of each way.
type File struct {
	Version  int
	Name     string // e.g. "init", from 001_init.up.sql
	Up, Down string
}

// Set is a store's migrations and the table that records the version (named
// in the errors that tell an operator what to do).
type Set struct {
	Files []File
	Table string
}

var fileName = regexp.MustCompile(`^([0-9]{3})_([a-z0-9_]+)\.(up|down)\.sql$`)

// MustLoad is Load for a package's embedded files: it panics on files that
// break the rules (each store's tests load them).
func MustLoad(fsys fs.FS, dir, table string) Set {
	files, err := Load(fsys, dir)
	if err != nil {
		panic(err)
	}
	return Set{Files: files, Table: table}
}

// Load reads the migrations in dir of fsys, oldest first. It refuses a file
// not named NNN_name.up.sql or NNN_name.down.sql, an empty file, a version
// without both files or with two names, a gap, and an empty set.
func Load(fsys fs.FS, dir string) ([]File, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read the migrations: %w", err)
	}
	byVersion := map[int]*File{}
	for _, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q is not named NNN_name.up.sql or NNN_name.down.sql", e.Name())
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration file %s: %w", e.Name(), err)
		}
		if strings.TrimSpace(string(body)) == "" {
			return nil, fmt.Errorf("migration file %s is empty", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		f := byVersion[v]
		if f == nil {
			f = &File{Version: v, Name: m[2]}
			byVersion[v] = f
		}
		if f.Name != m[2] {
			return nil, fmt.Errorf("migration %03d has two names, %q and %q", v, f.Name, m[2])
		}
		if m[3] == "up" {
			f.Up = string(body)
		} else {
			f.Down = string(body)
		}
	}
	if len(byVersion) == 0 {
		return nil, fmt.Errorf("no migration in %s", dir)
	}
	out := make([]File, 0, len(byVersion))
	for v := 1; v <= len(byVersion); v++ {
		f := byVersion[v]
		switch {
		case f == nil:
			return nil, fmt.Errorf("migration %03d is missing (versions must run 001..%03d without gaps)", v, len(byVersion))
		case f.Up == "" || f.Down == "":
			return nil, fmt.Errorf("migration %03d_%s needs both an .up.sql and a .down.sql file", v, f.Name)
		}
		out = append(out, *f)
	}
	return out, nil
}

// Latest is the newest version in the set.
func (s Set) Latest() int { return len(s.Files) }

// Status is where a database at version current stands.
func (s Set) Status(database string, current int, dirty bool) store.SchemaStatus {
	st := store.SchemaStatus{Database: database, Current: current, Latest: s.Latest(), Dirty: dirty,
		Migrations: make([]store.Migration, len(s.Files))}
	for i, f := range s.Files {
		st.Migrations[i] = store.Migration{Version: f.Version, Name: f.Name, Applied: f.Version <= current}
	}
	return st
}

// Check refuses a database this binary must not migrate or use: one a newer
// herald migrated (store.ErrSchemaAhead) or one whose version is marked
// dirty (store.ErrSchemaDirty, saying how to settle it).
func (s Set) Check(version int, dirty bool) error {
	switch {
	case version > s.Latest():
		return fmt.Errorf("the database schema is version %d, this herald knows up to %d: %w", version, s.Latest(), store.ErrSchemaAhead)
	case dirty:
		name := ""
		if i := slices.IndexFunc(s.Files, func(f File) bool { return f.Version == version }); i >= 0 {
			name = fmt.Sprintf(" (%03d_%s)", version, s.Files[i].Name)
		}
		return fmt.Errorf("%s records version %d%s as dirty: a migration to or from it began and did not finish. "+
			"Each migration ran in one transaction, so the schema is at that version, or at the one before it (a failed up) or after it (a failed down): check which, "+
			"then record it (UPDATE %s SET version = N, dirty = false; for version 0, DELETE FROM %s): %w",
			s.Table, version, name, s.Table, s.Table, store.ErrSchemaDirty)
	}
	return nil
}

// Tx is one migration's transaction; its errors are returned as they are.
type Tx interface {
	// Version reads the version table (0 with no row, or no table); it
	// refuses a database that is not herald's.
	Version(ctx context.Context) (version int, dirty bool, err error)
	// Apply runs a migration's SQL and records version, creating the
	// version table if need be; what names the step ("migration 001_init
	// up") for its errors.
	Apply(ctx context.Context, what, sql string, version int) error
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error // after Commit, a no-op
}

// Begin begins a Tx under the store's migration lock.
type Begin func(ctx context.Context) (Tx, error)

// Up applies every pending migration and returns the version reached (on
// error, the one before the migration that failed).
func (s Set) Up(ctx context.Context, begin Begin) (int, error) {
	for {
		v, moved, err := s.step(ctx, begin, s.Latest(), -1)
		if err != nil || !moved {
			return v, err
		}
	}
}

// Down reverts migration seen, the version the caller saw, in one
// transaction; it refuses, changing nothing, if the version has changed
// since. At version 0 it does nothing.
func (s Set) Down(ctx context.Context, begin Begin, seen int) (int, error) {
	if seen == 0 {
		return 0, nil
	}
	v, _, err := s.step(ctx, begin, seen-1, seen)
	return v, err
}

// step takes one step towards target and returns the version after it, and
// whether it moved; seen >= 0 is the version the database must be at.
func (s Set) step(ctx context.Context, begin Begin, target, seen int) (int, bool, error) {
	tx, err := begin(ctx)
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback(ctx)
	v, dirty, err := tx.Version(ctx)
	if err != nil {
		return 0, false, err
	}
	if err := s.Check(v, dirty); err != nil {
		return v, false, err
	}
	if seen >= 0 && v != seen {
		return v, false, fmt.Errorf("the schema changed meanwhile (from version %d to %d): nothing was reverted", seen, v)
	}
	var f File
	var sql, way string
	to := v
	switch {
	case v < target:
		f, sql, way, to = s.Files[v], s.Files[v].Up, "up", v+1
	case v > target:
		f, sql, way, to = s.Files[v-1], s.Files[v-1].Down, "down", v-1
	default:
		return v, false, nil
	}
	if err := tx.Apply(ctx, fmt.Sprintf("migration %03d_%s %s", f.Version, f.Name, way), sql, to); err != nil {
		return v, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return v, false, err
	}
	return to, true, nil
}
