package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// NotifyChannel is the LISTEN/NOTIFY channel the sequencer notifies, once
// per step that numbered records, with how many it numbered (decimal) as
// the payload. No appending transaction notifies (package doc,
// "Notifications").
const NotifyChannel = "herald_append"

// Listener holds a connection of its own that LISTENs on NotifyChannel.
// Notifications that arrive between two Waits are queued on the connection,
// so a daemon that sweeps between Waits misses none.
type Listener struct {
	mu     sync.Mutex // held by Wait: a pgx.Conn is not for concurrent use
	conn   *pgx.Conn
	closed context.Context // done once Close was called
	stop   context.CancelFunc
	own    *atomic.Uint32 // the store's RunSequencerWaking backend, whose notifications are skipped
}

// Listen opens a Listener on a new connection configured as the store's
// pool. Errors: ErrUnavailable.
func (s *Store) Listen(ctx context.Context) (*Listener, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, dbError(ctx, "listen", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, dbError(ctx, "listen", err)
	}
	closed, stop := context.WithCancel(context.Background())
	return &Listener{conn: conn, closed: closed, stop: stop, own: &s.ownPID}, nil
}

// Wait blocks until a sequencer step numbers records (or one did since the
// previous Wait returned) and returns the notification's payload: how many
// records that step numbered. The steps of the Store's own
// RunSequencerWaking are not reported: it told its caller itself. Errors:
// ctx's when it ends first; ErrUnavailable when the connection broke (open a
// new Listener, and sweep: appends made meanwhile were not heard);
// ErrListenerClosed.
func (l *Listener) Wait(ctx context.Context) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(l.closed, cancel)() // Close ends a Wait in progress
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.closed.Err() == nil {
		n, err := l.conn.WaitForNotification(ctx)
		if err != nil && l.closed.Err() == nil {
			return "", dbError(ctx, "wait for append", err)
		}
		if pid := l.own.Load(); err == nil && (pid == 0 || n.PID != pid) {
			return n.Payload, nil
		}
	}
	return "", ErrListenerClosed
}

// Close ends a Wait in progress and closes the connection.
func (l *Listener) Close() {
	l.stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conn.Close(context.Background())
}

// ErrListenerClosed is Wait's error after Close.
var ErrListenerClosed = errors.New("postgres: listener closed")
