// Package store holds what herald's stores (subpackages memory, sqlite,
// postgres) share beyond the journal and push contracts: Backend, schema
// errors and status, retention, and the rules they all apply.
// store/storetest is the conformance suite they all pass.
package store

import (
	"errors"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// Backend is what each store implements over one database.
type Backend interface {
	journal.Journal
	push.Store
	Retention
}

// Errors of opening or migrating a database, wrapped with the versions
// involved; test them with errors.Is. A database that fails these checks is
// left unchanged.
var (
	// ErrSchemaBehind: the schema is older than this binary's.
	ErrSchemaBehind = errors.New("database schema is out of date: run `herald migrate up`")
	// ErrSchemaAhead: a newer herald migrated the database; never migrate
	// down what it wrote.
	ErrSchemaAhead = errors.New("database schema is newer than this herald binary: upgrade herald")
	// ErrNotHerald: another application's tables, or a file that is not
	// SQLite at all.
	ErrNotHerald = errors.New("not a herald database")
	// ErrSchemaDirty: the version table marks its version dirty
	// (golang-migrate's mark of a migration that did not finish; herald's
	// runner never sets it). The wrapping error says how to settle it.
	ErrSchemaDirty = errors.New("database schema is dirty: a migration did not finish")
)

// Migration is one embedded schema migration of a SQL store.
type Migration struct {
	Version int    `json:"version"` // 1-based, contiguous: the NNN of its file names
	Name    string `json:"name"`    // e.g. "init", from the file name
	Applied bool   `json:"applied"` // Version <= the database's current version
}

// SchemaStatus is where a database's schema stands, as the SQL stores'
// MigrateUp, MigrateDown and MigrationStatus report it.
type SchemaStatus struct {
	Database   string      `json:"database"`        // the SQLite file's path, or the PostgreSQL database's name (never its URL)
	Current    int         `json:"current"`         // the version applied (0: none); when Dirty, the one marked dirty
	Latest     int         `json:"latest"`          // the newest migration this binary embeds
	Dirty      bool        `json:"dirty,omitempty"` // see ErrSchemaDirty
	Migrations []Migration `json:"migrations"`      // every embedded migration, oldest first
}

// Pending reports whether migrations remain to be applied.
func (s SchemaStatus) Pending() bool { return s.Current < s.Latest }
