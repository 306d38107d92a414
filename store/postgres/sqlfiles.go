package postgres

import (
	"embed"
	"text/template"

	"github.com/heraldpush/herald/internal/sqlfile"
)

// The store's SQL lives in sql/*.sql (package doc, "Where the rules live"),
// with named parameters (@stream, passed as pgx.NamedArgs).
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = sqlfile.MustLoad(sqlFiles, "sql", template.FuncMap{"notify_channel": func() string { return NotifyChannel }})

// stmt returns the statement name of sql/*.sql.
func stmt(name string) string { return statements.Get(name) }
