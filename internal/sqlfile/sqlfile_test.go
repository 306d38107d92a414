package sqlfile_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/sqlfile"
)

// TestEveryStatementNamedInGoIsInTheSQLFiles: a name a store's stmt("x")
// gives that no .sql file of the store has would panic only when its call
// runs; here every call's name is checked, and every statement has a caller.
func TestEveryStatementNamedInGoIsInTheSQLFiles(t *testing.T) {
	for _, dir := range []string{"../../store/postgres", "../../store/sqlite"} {
		statements := sqlfile.MustLoad(os.DirFS(dir), "sql", template.FuncMap{"notify_channel": func() string { return "c" }})
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		called := map[string]bool{}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, m := range regexp.MustCompile(`stmt\("([a-z_]+)"\)`).FindAllSubmatch(src, -1) {
				called[string(m[1])] = true
				require.Contains(t, statements, string(m[1]), "%s names a statement no sql/*.sql file has", f)
			}
		}
		for name := range statements {
			require.True(t, called[name], "%s: statement %s of sql/*.sql has no caller", dir, name)
		}
	}
}
