package daemon

import (
	"context"
	"time"

	"github.com/heraldpush/herald/store/postgres"
)

// appendListener is implemented by stores that can signal appends made by
// other processes (store/postgres: LISTEN/NOTIFY).
type appendListener interface {
	Listen(ctx context.Context) (*postgres.Listener, error)
}

// sequencerRunner is implemented by stores that number appended records
// after their commit (store/postgres: the sequencer) and can say when a
// step of theirs numbered some, so that the daemon wakes its own workers
// at once rather than when the step's notification comes back through the
// database (which other processes still get).
type sequencerRunner interface {
	RunSequencerWaking(ctx context.Context, onError func(error), numbered func())
}

// sequencerLogEvery bounds how often a failing sequencer is logged: it
// retries every 100 ms while the database is away.
const sequencerLogEvery = 10 * time.Second

// listenRetry is how long the daemon waits before listening again after the
// database went away: short, because until it listens again it hears no
// append and claims only every Every, which may be an hour.
const listenRetry = time.Second

// wakeOnAppend wakes every worker when another process's sequencer
// numbers appended records (the daemon's own steps wake them directly), and
// each time it starts listening: appends committed before, while nobody
// listened (at start, after a claim found nothing; or while the database
// was away, which it logs once, listening again every listenRetry), were
// not heard.
func (d *Daemon) wakeOnAppend(ctx context.Context, store appendListener) {
	failing := false
	for ctx.Err() == nil {
		l, err := store.Listen(ctx)
		if err == nil {
			if failing {
				d.log.Info("herald: listening for appends again")
				failing = false
			}
			d.wakeAll()
			for err == nil {
				if _, err = l.Wait(ctx); err == nil {
					d.wakeAll()
				}
			}
			l.Close()
		}
		if ctx.Err() != nil {
			return
		}
		if !failing {
			d.log.Warn("herald: cannot listen for appends; claiming on the interval only until it recovers", "err", err)
			failing = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(listenRetry, d.every)):
		}
	}
}

// wakeAll makes every worker claim at once.
func (d *Daemon) wakeAll() {
	for _, w := range d.workers {
		w.Wake()
	}
}

// runSequencer numbers appended records (store/postgres) until ctx ends,
// waking every worker after each step that numbered records, and logging
// a failing sequencer at most every sequencerLogEvery.
func (d *Daemon) runSequencer(ctx context.Context, sq sequencerRunner) {
	var last time.Time
	sq.RunSequencerWaking(ctx, func(err error) {
		if now := time.Now(); now.Sub(last) >= sequencerLogEvery {
			last = now
			d.log.Warn("herald: the sequencer cannot number appended records; retrying", "err", err)
		}
	}, d.wakeAll)
}
