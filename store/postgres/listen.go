package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// NotifyChannel is the LISTEN/NOTIFY channel the sequencer notifies, once a
// step that numbered records, with how many (decimal) as the payload.
const NotifyChannel = "herald_append"

// Listener LISTENs on NotifyChannel on a connection of its own, which queues
// the notifications that arrive between two Waits.
type Listener struct {
	mu     sync.Mutex // held by Wait: a pgx.Conn is not for concurrent use
	conn   *pgx.Conn
	closed context.Context // done once Close was called
	stop   context.CancelFunc
	own    *atomic.Uint32 // the store's RunSequencerWaking backend, whose notifications are skipped
}

// Listen opens a Listener configured as the store's pool. Errors: ErrUnavailable.
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
// previous Wait) and returns the notification's payload, but for the steps
// of the Store's own RunSequencerWaking. Errors: ctx's; ErrUnavailable when
// the connection broke (open a new Listener, and sweep: appends made
// meanwhile were not heard); ErrListenerClosed.
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
