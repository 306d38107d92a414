// Package sqlfile loads the SQL stores' statements from embedded .sql
// files: each statement is the lines under a line "-- name: x", up to the
// next such line (what stands before a file's first one is its comment);
// the shared rules of the directory's rules.sql are taken in as Go template
// actions ({{template "x"}}; args "k" "v" … makes a template's arguments,
// in pairs).
package sqlfile

import (
	"fmt"
	"io/fs"
	"strings"
	"text/template"
)

// Statements are a store's statements by name.
type Statements map[string]string

// MustLoad reads every dir/*.sql of fsys, templates run with funcs beside
// args, and panics on a template error, args not in pairs or a name given
// twice: a bug of the store, found by any test.
func MustLoad(fsys fs.FS, dir string, funcs template.FuncMap) Statements {
	t := template.Must(template.New("").Option("missingkey=error").Funcs(template.FuncMap{
		"args": func(kv ...string) map[string]string {
			if len(kv)%2 != 0 {
				panic(fmt.Sprintf("args %q: not in pairs", kv))
			}
			m := map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		},
	}).Funcs(funcs).ParseFS(fsys, dir+"/*.sql"))
	files, err := fs.ReadDir(fsys, dir)
	if err != nil {
		panic(err)
	}
	out := Statements{}
	for _, f := range files {
		if f.Name() == "rules.sql" {
			continue
		}
		var b strings.Builder
		if err := t.ExecuteTemplate(&b, f.Name(), nil); err != nil {
			panic(fmt.Sprintf("%s/%s: %v", dir, f.Name(), err))
		}
		name, stmt := "", strings.Builder{}
		flush := func() {
			if name != "" {
				out[name] = strings.TrimSpace(stmt.String())
			}
			stmt.Reset()
		}
		for line := range strings.Lines(b.String()) {
			if n, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "-- name: "); ok {
				flush()
				if _, dup := out[n]; dup {
					panic(fmt.Sprintf("%s/%s: statement %q is named twice", dir, f.Name(), n))
				}
				name = n
				continue
			}
			if name != "" {
				stmt.WriteString(line)
			}
		}
		flush()
	}
	return out
}

// Get returns the statement name; a name no file has is a bug of the
// store, which TestEveryStatementNamedInGoIsInTheSQLFiles finds.
func (s Statements) Get(name string) string {
	q, ok := s[name]
	if !ok {
		panic(fmt.Sprintf("no statement %q in the store's .sql files", name))
	}
	return q
}
