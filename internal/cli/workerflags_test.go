package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// --max-per-host out of range is a usage error (exit 2) that names the flag,
// before anything is opened: the database file is never created.
func TestMaxPerHostOutOfRange(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--max-per-host", "0", "--metrics-addr", "", "--admin-addr", ""},
		{"run", "--max-per-host", "-3", "--metrics-addr", "", "--admin-addr", ""},
		{"sweep", "--namespace", "webhook", "--max-per-host", "1025"},
	} {
		db := filepath.Join(t.TempDir(), "herald.db")
		var out, errs bytes.Buffer
		code := Main(context.Background(), append([]string{"--database", "sqlite:" + db}, args...),
			Stdio{In: strings.NewReader(""), Out: &out, Err: &errs}, func(string) string { return "" })
		require.Equal(t, ExitUsage, code, "%v: %s", args, errs.String())
		require.Contains(t, errs.String(), "--max-per-host", args)
		_, err := os.Stat(db)
		require.True(t, os.IsNotExist(err), "%v: the database was opened", args)
	}
}
