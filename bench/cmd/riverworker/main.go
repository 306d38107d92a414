// Command riverworker is the benchmark's River worker process: a River
// client (riverpgxv5) with one queue of -workers workers whose job POSTs one
// event to one receiver (wire.DeliveryWorker). It prints "ready" once the
// client has started, and on SIGTERM stops gracefully (jobs in flight
// finish, completions are flushed) and exits 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldpush/herald/bench/internal/wire"
)

func main() {
	var (
		url      = flag.String("database", "", "postgres:// URL of the database with River's schema")
		workers  = flag.Int("workers", 16, "MaxWorkers of the queue (and keep-alive connections)")
		cooldown = flag.Duration("fetch-cooldown", river.FetchCooldownDefault, "River FetchCooldown")
		poll     = flag.Duration("fetch-poll-interval", river.FetchPollIntervalDefault, "River FetchPollInterval")
	)
	flag.Parse()
	if err := run(*url, *workers, *cooldown, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "riverworker:", err)
		os.Exit(1)
	}
}

func run(url string, workers int, cooldown, poll time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	ws := river.NewWorkers()
	river.AddWorker(ws, &wire.DeliveryWorker{Client: wire.NewClient(workers), Signers: &wire.Signers{}})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
		FetchCooldown:     cooldown,
		FetchPollInterval: poll,
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	fmt.Println("ready")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return client.Stop(sctx)
}
