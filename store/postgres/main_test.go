package postgres_test

import (
	"context"
	"flag"
	"net/url"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// migratedURL returns the URL of a fresh database with herald's schema.
func migratedURL(tb testing.TB) string {
	tb.Helper()
	url := pgtest.NewDatabase(tb)
	_, err := postgres.MigrateUp(tb.Context(), url)
	require.NoError(tb, err)
	return url
}

// withConns is rawURL with a pool of n connections.
func withConns(tb testing.TB, rawURL string, n int) string {
	tb.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(tb, err)
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String()
}

// openStore opens a store with a pool of its own, as a separate worker
// process would.
func openStore(tb testing.TB, url string, opts ...postgres.Option) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(tb.Context(), url, opts...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// newStore returns a store on a fresh, migrated database.
func newStore(tb testing.TB, opts ...postgres.Option) *postgres.Store {
	return openStore(tb, migratedURL(tb), opts...)
}

// newPool returns a pool on a fresh database with herald's schema.
func newPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	pool, err := postgres.NewPool(tb.Context(), migratedURL(tb))
	require.NoError(tb, err)
	tb.Cleanup(pool.Close)
	return pool
}

// TestConformance runs the suite every store passes, its tests in parallel,
// each on a database no other test uses while it runs. As river's test
// schemas are, the databases are reused: -parallel of them (and one for the
// suite's first backend), copies of one migrated database; a test takes a
// free one and empties it with TRUNCATE, and its pool's connections stay
// warm. A database of its own for every test costs twice the server's CPU:
// each new database's first connections build its catalog caches again.
func TestConformance(t *testing.T) {
	template := migratedURL(t)
	n := 2
	if f := flag.Lookup("test.parallel"); f != nil {
		n, _ = strconv.Atoi(f.Value.String())
	}
	free := make(chan *pgxpool.Pool, n+1)
	for range n + 1 {
		pool, err := postgres.NewPool(t.Context(), pgtest.CopyDatabase(t, template))
		require.NoError(t, err)
		t.Cleanup(pool.Close) // before the database is dropped
		free <- pool
	}
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		var pool *pgxpool.Pool
		select {
		case pool = <-free:
			t.Cleanup(func() { free <- pool })
		default: // more tests at once than -parallel: a database of its own
			var err error
			pool, err = postgres.NewPool(t.Context(), pgtest.CopyDatabase(t, template))
			require.NoError(t, err)
			t.Cleanup(pool.Close)
		}
		_, err := pool.Exec(t.Context(), "TRUNCATE herald_evidence, herald_resend, herald_registration, herald_subscription, herald_seq, herald_record, herald_stream, herald_host, herald_token, herald_actor_key RESTART IDENTITY")
		require.NoError(t, err)
		// A keyring: actor keys, always secrets, are stored only sealed.
		s, err := postgres.New(t.Context(), pool, postgres.WithKeyring(seal.Generate()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return unnumbering{s}
	})
}

// unnumbering is the store as the suite sees it, with
// storetest.Unnumbering: AppendTx in a transaction of its own, and no
// sequencer running (Due, which would run a step, is not called between).
type unnumbering struct{ *postgres.Store }

func (u unnumbering) CommitUnnumbered(ctx context.Context, stream string, entries ...journal.Entry) error {
	return pgx.BeginFunc(ctx, u.Pool(), func(tx pgx.Tx) error {
		_, err := u.AppendTx(ctx, tx, stream, entries...)
		return err
	})
}

func (u unnumbering) Number(ctx context.Context) error {
	_, err := u.Sequence(ctx)
	return err
}
