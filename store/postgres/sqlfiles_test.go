package postgres

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryStatementNamedInGoIsInTheSQLFiles: a name stmt is called with
// that no sql/*.sql file has would panic only when its call runs; here every
// call's name is checked, and every statement of the files has a caller.
func TestEveryStatementNamedInGoIsInTheSQLFiles(t *testing.T) {
	files, err := filepath.Glob("*.go")
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
		require.True(t, called[name], "statement %s of sql/*.sql has no caller", name)
	}
}
