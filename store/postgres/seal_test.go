package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/storetest"
)

// openSealing opens a store on url with keyring, closed when t ends.
func openSealing(t *testing.T, url string, k *seal.Keyring) *postgres.Store {
	s, err := postgres.Open(context.Background(), url, postgres.WithKeyring(k))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSealing(t *testing.T) {
	url := migratedURL(t)
	raw, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close(context.Background()) })
	storetest.RunSealing(t, func(t *testing.T, k *seal.Keyring) storetest.SealingStore {
		return openSealing(t, url, k)
	}, storetest.RawConfig{
		Get: func(t *testing.T, k store.Key) (v []byte) {
			require.NoError(t, raw.QueryRow(context.Background(), `SELECT config FROM herald_registration WHERE stream = $1 AND id = $2`, k.Stream, k.ID).Scan(&v))
			return v
		},
		Set: func(t *testing.T, k store.Key, v []byte) {
			_, err := raw.Exec(context.Background(), `UPDATE herald_registration SET config = $1 WHERE stream = $2 AND id = $3`, v, k.Stream, k.ID)
			require.NoError(t, err)
		},
	})
}

// TestNoSecretInPgDump: with a keyring, a pg_dump of the database holds no
// registration's secret.
func TestNoSecretInPgDump(t *testing.T) {
	url := migratedURL(t)
	storetest.RegisterSecrets(t, openSealing(t, url, seal.Generate()))
	dump := pgtest.Dump(t, url)
	require.Contains(t, string(dump), "receiver.example/webhook", "the dump holds the registrations")
	storetest.RequireNoSecret(t, "pg_dump", dump)

	// The control: a config in clear, as before sealing, is found.
	raw, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	_, err = raw.Exec(context.Background(), `UPDATE herald_registration SET config = $1 WHERE id = 'a2a'`, []byte(storetest.Secrets[2].Config))
	require.NoError(t, err)
	require.NoError(t, raw.Close(context.Background()))
	_, found := storetest.FindSecret(pgtest.Dump(t, url))
	require.True(t, found, "the dump's grep finds a secret stored in clear")
}

// TestASecretWithoutAKeyringIsRefused: without a keyring a config holding a
// secret is refused, naming how to make a key, and nothing is stored; one
// without a secret is stored as given.
func TestASecretWithoutAKeyringIsRefused(t *testing.T) {
	ctx := context.Background()
	s := openSealing(t, migratedURL(t), nil)
	for _, c := range storetest.Secrets {
		_, err := s.Register(ctx, store.Registration{Stream: "sealed", ID: c.Namespace, Namespace: c.Namespace,
			URL: "https://receiver.example/", Config: store.Config(c.Config)})
		require.ErrorIs(t, err, store.ErrNoKeyring, c.Namespace)
		require.ErrorContains(t, err, "herald keyring new")
	}
	list, err := s.List(ctx, store.ListQuery{})
	require.NoError(t, err)
	require.Empty(t, list, "a refused registration is not stored")
	cfg := `{"source":"https://shop.example"}`
	r, err := s.Register(ctx, store.Registration{Stream: "plain", ID: "ce", Namespace: "cloudevents", URL: "https://receiver.example/", Config: store.Config(cfg)})
	require.NoError(t, err)
	require.JSONEq(t, cfg, string(r.Config))
}
