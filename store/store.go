// Package store holds what herald's stores share beyond the journal and push
// contracts: the errors a store returns when the database it is given is not
// one it can use. The stores themselves live in subpackages named after what
// they wrap: memory, sqlite, postgres. store/storetest is the conformance
// suite they all pass.
package store

import "errors"

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
	// ErrSchemaDirty: a migration of this database began and did not finish
	// (it failed, or its process died). herald cannot tell which schema is in
	// place, so it changes nothing until an operator has checked it and
	// recorded the version; the wrapping error says how.
	ErrSchemaDirty = errors.New("database schema is dirty: a migration did not finish")
)
