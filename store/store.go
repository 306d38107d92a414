// Package store holds what herald's stores share beyond the journal and push
// contracts: the errors a store returns when the database it is given is not
// one it can use, and the shape of a schema's migration status. The stores
// themselves live in subpackages named after what they wrap: memory, sqlite,
// postgres. store/storetest is the conformance suite they all pass.
package store

import (
	"errors"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// Backend is what each of herald's stores (memory, sqlite, postgres)
// implements over one database: the journal, the push store and
// retention. store/storetest checks it; the CLI opens one.
type Backend interface {
	journal.Journal
	push.Store
	Retention
}

// Errors of opening a database. Stores wrap them with the versions involved;
// callers test them with errors.Is. Opening never changes a database that
// fails these checks.
var (
	// ErrSchemaBehind: the database's schema is older than this binary's.
	// Run `herald migrate up`.
	ErrSchemaBehind = errors.New("database schema is out of date: run `herald migrate up`")
	// ErrSchemaAhead: the database was migrated by a newer herald. Upgrade
	// this binary; never migrate down data a newer version wrote.
	ErrSchemaAhead = errors.New("database schema is newer than this herald binary: upgrade herald")
	// ErrNotHerald: the file or database holds something that is not a
	// herald database (tables of another application, a file that is not
	// SQLite at all).
	ErrNotHerald = errors.New("not a herald database")
	// ErrSchemaDirty: the version table marks its version dirty, as a
	// migration that began and did not finish leaves it in golang-migrate's
	// protocol (herald's runner applies a migration and its version in one
	// transaction and never sets the mark; another tool or a hand may).
	// herald cannot tell which schema is in place, so it changes nothing
	// until an operator has checked it and recorded the version; the
	// wrapping error says how.
	ErrSchemaDirty = errors.New("database schema is dirty: a migration did not finish")
)

// Migration is one embedded schema migration of a SQL store.
type Migration struct {
	Version int    `json:"version"` // 1-based, contiguous: the NNN of its file names
	Name    string `json:"name"`    // e.g. "init", from the file name
	Applied bool   `json:"applied"` // Version <= the database's current version
}

// SchemaStatus is where a database's schema stands, as store/sqlite and
// store/postgres report it from their MigrateUp, MigrateDown and
// MigrationStatus.
type SchemaStatus struct {
	// Database names the database: the SQLite file's path, or the
	// PostgreSQL database's name (never its URL, which may hold a password).
	Database string `json:"database"`
	// Current is the version applied; 0 for a new database. When Dirty, it
	// is the version marked dirty.
	Current int `json:"current"`
	// Latest is the newest migration this binary embeds.
	Latest int `json:"latest"`
	// Dirty: a migration to or from Current began and did not finish (see
	// ErrSchemaDirty).
	Dirty      bool        `json:"dirty,omitempty"`
	Migrations []Migration `json:"migrations"` // every embedded migration, oldest first
}

// Pending reports whether migrations remain to be applied.
func (s SchemaStatus) Pending() bool { return s.Current < s.Latest }
