package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newPool returns a pool on a fresh database with herald's schema.
func newPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	_, err := postgres.MigrateUp(ctx, url)
	require.NoError(t, err)
	pool, err := postgres.NewPool(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// newStore returns a store on a fresh, migrated database.
func newStore(t testing.TB, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s, err := postgres.New(context.Background(), newPool(t), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestConformance runs the suite every store passes. Subtests share one
// database, emptied with TRUNCATE before each: creating a database costs
// PostgreSQL about 0.3 s.
func TestConformance(t *testing.T) {
	pool := newPool(t)
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		_, err := pool.Exec(t.Context(), "TRUNCATE herald_evidence, herald_registration, herald_seq, herald_record, herald_stream, herald_host RESTART IDENTITY")
		require.NoError(t, err)
		s, err := postgres.New(t.Context(), pool)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
