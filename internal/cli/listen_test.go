package cli

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// herald run listens before it opens its database: an address in use
// fails, naming it, having created and migrated nothing.
func TestRunOnABusyAddressCreatesNoDatabase(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	addr := busy.Addr().String()
	for _, flag := range []string{"--metrics-addr", "--admin-addr", "--api-addr"} {
		args := map[string]string{"--metrics-addr": "127.0.0.1:0", "--admin-addr": "", "--api-addr": ""}
		args[flag] = addr
		db := filepath.Join(t.TempDir(), "herald.db")
		r := runCLI(t, db, "", "run", "--metrics-addr", args["--metrics-addr"], "--admin-addr", args["--admin-addr"], "--api-addr", args["--api-addr"])
		require.Equal(t, ExitError, r.code, "%s: %s", flag, r.stderr)
		require.Contains(t, r.stderr, flag+" "+addr, "the error names the flag and the address")
		require.Contains(t, r.stderr, "address already in use", flag)
		_, err := os.Stat(db)
		require.ErrorIs(t, err, os.ErrNotExist, "%s: a run that cannot listen created the database", flag)
	}
}
