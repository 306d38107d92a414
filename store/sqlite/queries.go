package sqlite

import (
	"embed"

	"github.com/heraldpush/herald/internal/sqlfile"
)

// The store's SQL lives in sql/*.sql, each statement by name (package
// sqlfile), the fragments several share in sql/rules.sql. Parameters are ?
// in the order the caller passes them, or ?N where a statement uses one
// twice. List's WHERE clause is built at run time.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = sqlfile.MustLoad(sqlFiles, "sql", nil)

// stmt returns the statement name of sql/*.sql.
func stmt(name string) string { return statements.Get(name) }

// The migration runner's statements (open.go): schema probes and the file's
// settings.
const (
	sqlApplicationID = "PRAGMA application_id"
	sqlUserVersion   = "PRAGMA user_version"
	sqlTableNames    = "SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
	// golang-migrate's table keeps one row; none before the first migration.
	sqlCurrentVersion = "SELECT version, dirty FROM " + migrationsTable + " LIMIT 1"
	sqlAutoVacuum     = "PRAGMA auto_vacuum = INCREMENTAL"
	sqlWAL            = "PRAGMA journal_mode = WAL"
)
