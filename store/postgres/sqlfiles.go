package postgres

import (
	"bufio"
	"embed"
	"fmt"
	"path"
	"strings"
	"text/template"
)

// The store's SQL lives in sql/*.sql: each statement under a line
// "-- name: x", with named parameters (@stream, passed as pgx.NamedArgs),
// taking in the shared rules of sql/rules.sql as Go template actions.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// statements holds every statement of sql/*.sql by name, templates run.
var statements = loadStatements()

func loadStatements() map[string]string {
	t := template.Must(template.New("").Option("missingkey=error").Funcs(template.FuncMap{
		// args makes a template's arguments: args "cols" "r.id" "limit" "".
		"args": func(kv ...string) map[string]string {
			m := map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		},
		"notify_channel": func() string { return NotifyChannel },
	}).ParseFS(sqlFiles, "sql/*.sql"))
	files, err := sqlFiles.ReadDir("sql")
	if err != nil {
		panic(err)
	}
	out := map[string]string{}
	for _, f := range files {
		if f.Name() == "rules.sql" {
			continue
		}
		var b strings.Builder
		if err := t.ExecuteTemplate(&b, path.Base(f.Name()), nil); err != nil {
			panic(fmt.Sprintf("postgres: sql/%s: %v", f.Name(), err))
		}
		name, stmt := "", strings.Builder{}
		flush := func() {
			if name != "" {
				out[name] = strings.TrimSpace(stmt.String())
			}
			stmt.Reset()
		}
		sc := bufio.NewScanner(strings.NewReader(b.String()))
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "-- name: "); ok {
				flush()
				if _, dup := out[n]; dup {
					panic(fmt.Sprintf("postgres: sql/%s: statement %q is named twice", f.Name(), n))
				}
				name = n
				continue
			}
			if name != "" {
				stmt.WriteString(sc.Text() + "\n")
			}
		}
		flush()
	}
	return out
}

// stmt returns the statement name of sql/*.sql; a name no file has is a
// bug of this package, found by any test.
func stmt(name string) string {
	s, ok := statements[name]
	if !ok {
		panic(fmt.Sprintf("postgres: no statement %q in sql/*.sql", name))
	}
	return s
}
