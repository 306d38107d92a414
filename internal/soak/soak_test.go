package soak

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/sqlite"
	"github.com/heraldpush/herald/transport"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

var t0 = time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)

// config is the CI size: 15 simulated minutes, retention 2 minutes (passed
// seven times), a receiver down for 2 minutes in every 4. HERALD_SOAK_TICKS runs longer
// (RELIABILITY.md gives the figures of a long run).
func config(t *testing.T) Config {
	cfg := Config{Ticks: 900, Streams: 10, PerTick: 5, Receivers: 2, Payload: 512,
		Retain: 2 * time.Minute, PruneEvery: 10, SampleEvery: 150, DownFor: 120}
	if v := os.Getenv("HERALD_SOAK_TICKS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "HERALD_SOAK_TICKS")
		cfg.Ticks, cfg.SampleEvery = n, max(n/20, 1)
	}
	return cfg
}

func worker(s store.Store, j journal.Journal) (*push.Worker, error) {
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	return push.NewWorker(j, s, tr, Projection{}, push.WithMaxAttempts(3), push.WithLogger(slog.New(slog.DiscardHandler)))
}

// check is what every soak must show: nothing lost, nothing out of order,
// and a journal bounded by what the retention and the flaky receiver's
// downtime keep, however long it ran.
func check(t *testing.T, cfg Config, res Result) {
	t.Helper()
	require.Empty(t, res.Gaps, "deliveries out of order or missing")
	for s := range cfg.Streams {
		ids := []string{"r0", "r1"}
		if s == 0 {
			ids = append(ids, "flaky")
		}
		want := res.Samples[len(res.Samples)-1].Appended / cfg.Streams
		for _, id := range ids {
			k := store.Key{Stream: fmt.Sprintf("soak/%d", s), ID: id}
			require.InDelta(t, want, res.Received[k], 1, "%v received every record of its stream", k)
		}
	}
	// Bounded: the records of the retention age, plus what the flaky
	// receiver holds (its downtime and the backoff before its unpark),
	// plus one prune interval, whatever the length of the run.
	bound := uint64(cfg.PerTick) * uint64(int(cfg.Retain/time.Second)+3*cfg.DownFor+cfg.PruneEvery)
	for _, smp := range res.Samples {
		require.LessOrEqual(t, smp.Retained, bound, "tick %d: retained %d records, bound %d", smp.Tick, smp.Retained, bound)
	}
	for _, smp := range res.Samples {
		t.Logf("tick %6d: appended %7d, retained %5d (%6d KiB payload), disk %6d KiB, last prune %3d records in %v",
			smp.Tick, smp.Appended, smp.Retained, smp.Bytes>>10, smp.Disk>>10, smp.PruneRecords, smp.PruneTime.Round(time.Microsecond))
	}
}

func TestSoakSQLite(t *testing.T) {
	ctx := context.Background()
	clock := NewClock(t0)
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := sqlite.Open(ctx, path, sqlite.WithClock(clock.Now))
	require.NoError(t, err)
	defer s.Close()
	size := func(context.Context) (int64, error) {
		var total int64
		for _, p := range []string{path, path + "-wal"} {
			if fi, err := os.Stat(p); err == nil {
				total += fi.Size()
			}
		}
		return total, nil
	}
	cfg := config(t)
	res, err := Run(ctx, s, clock, size, worker, cfg)
	require.NoError(t, err)
	check(t, cfg, res)
}

func TestSoakPostgres(t *testing.T) {
	ctx := context.Background()
	clock := NewClock(t0)
	url := pgtest.NewDatabase(t)
	_, err := postgres.MigrateUp(ctx, url)
	require.NoError(t, err)
	pool, err := postgres.NewPool(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	s, err := postgres.New(ctx, pool, postgres.WithClock(clock.Now))
	require.NoError(t, err)
	defer s.Close()
	size := func(ctx context.Context) (n int64, err error) {
		err = pool.QueryRow(ctx, `SELECT sum(pg_total_relation_size(c)) FROM unnest(ARRAY['herald_record', 'herald_seq', 'herald_evidence', 'herald_registration', 'herald_stream']::regclass[]) c`).Scan(&n)
		return n, err
	}
	cfg := config(t)
	res, err := Run(ctx, s, clock, size, worker, cfg)
	require.NoError(t, err)
	check(t, cfg, res)
}
