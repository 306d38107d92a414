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
	// The schema's shape: its tables, indexes, triggers and views by name and
	// each table's columns, which statements depend on (a CHECK's or a
	// trigger's text is left out, so that a comment edited in the migration
	// refuses no file).
	sqlSchemaShape = `SELECT m.type || ' ' || m.name FROM sqlite_schema m WHERE ` + shapeOf + `
UNION ALL
SELECT 'column ' || m.name || '.' || p.name || ' ' || p.type || iif(p."notnull", ' NOT NULL', '') ||
       coalesce(' DEFAULT ' || p.dflt_value, '') || iif(p.pk > 0, ' PRIMARY KEY', '')
FROM sqlite_schema m, pragma_table_info(m.name) p WHERE m.type = 'table' AND ` + shapeOf + `
ORDER BY 1`
	shapeOf = "m.name NOT LIKE 'sqlite_%' AND m.name NOT IN ('" + migrationsTable + "', 'version_unique')"
	// golang-migrate's table keeps one row; none before the first migration.
	sqlCurrentVersion = "SELECT version, dirty FROM " + migrationsTable + " LIMIT 1"
	sqlAutoVacuum     = "PRAGMA auto_vacuum = INCREMENTAL"
	sqlWAL            = "PRAGMA journal_mode = WAL"
)
