package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
	"github.com/heraldpush/herald/store/storetest"
)

func TestSealing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	raw, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })
	storetest.RunSealing(t, func(t *testing.T, k *seal.Keyring) storetest.SealingStore {
		s, err := sqlite.Open(context.Background(), path, sqlite.WithKeyring(k))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}, storetest.RawConfig{
		Get: func(t *testing.T, k store.Key) (v []byte) {
			require.NoError(t, raw.QueryRow(`SELECT config FROM herald_registration WHERE stream = ? AND id = ?`, k.Stream, k.ID).Scan(&v))
			return v
		},
		Set: func(t *testing.T, k store.Key, v []byte) {
			_, err := raw.Exec(`UPDATE herald_registration SET config = ? WHERE stream = ? AND id = ?`, v, k.Stream, k.ID)
			require.NoError(t, err)
		},
	})
}

// TestNoSecretInTheFileOrItsWAL: with a keyring, neither the database file
// nor its write-ahead log holds a registration's secret, and both are
// readable by their owner only.
func TestNoSecretInTheFileOrItsWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := sqlite.Open(context.Background(), path, sqlite.WithKeyring(seal.Generate()))
	require.NoError(t, err)
	defer s.Close()
	storetest.RegisterSecrets(t, s)
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "%s's mode", filepath.Base(name))
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		storetest.RequireNoSecret(t, filepath.Base(name), b)
	}
	wal, err := os.ReadFile(path + "-wal")
	require.NoError(t, err)
	require.Contains(t, string(wal), seal.Prefix, "the WAL holds the sealed configs: the grep looked where they are")

	// The control: a config in clear, as before sealing, is found.
	rawExec(t, path, `UPDATE herald_registration SET config = CAST('`+storetest.Secrets[2].Config+`' AS BLOB) WHERE id = 'a2a'`)
	wal, err = os.ReadFile(path + "-wal")
	require.NoError(t, err)
	_, found := storetest.FindSecret(wal)
	require.True(t, found, "the grep finds a secret stored in clear")
}
