package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldpush/herald/store"
	"github.com/jackc/pgx/v5"
)

const (
	// sequencerPage bounds the records of a step, to bound its transaction.
	sequencerPage = 10_000
)

// RunSequencer's interval adapts to the load (nextPoll), since each step
// costs a commit (a WAL flush the application's commits queue behind) and
// about a millisecond of server CPU however few records it numbers (at a
// fixed 5 ms, 90-290 µs per transaction of a writer of 1,000 a second).
const (
	// MinSequencerInterval is the interval after an AppendTx of this
	// process woke an idle runner, and the shortest under a heavy load.
	MinSequencerInterval = 5 * time.Millisecond
	// DefaultSequencerInterval is the default busy bound: at 20 ms the
	// append-to-receipt p99 was three times a fixed 5 ms's (larger steps
	// deliver in larger bursts), for ~6% less of a writer's CPU.
	DefaultSequencerInterval = 10 * time.Millisecond
	// MaxSequencerInterval is what an idle database pays: one probe of an
	// empty index range per interval.
	MaxSequencerInterval = 100 * time.Millisecond
	sequencerBatch       = 64 // records that spread a step's cost to a few percent of each
)

// nextPoll is RunSequencer's interval after a poll at interval that
// numbered n records (n < 0: it failed).
func nextPoll(interval, busy time.Duration, n int) time.Duration {
	switch {
	case n < 0:
		return MaxSequencerInterval
	case n == 0:
		return min(2*interval, MaxSequencerInterval)
	case n < sequencerBatch:
		return min(2*interval, busy)
	default:
		return min(max(interval/2, MinSequencerInterval), busy)
	}
}

// Sequence runs the sequencer once, unless another process holds its lock,
// and returns how many records it numbered or refused. Errors:
// ErrUnavailable, ErrRetry, *Error.
func (s *Store) Sequence(ctx context.Context) (int, error) {
	return s.sequence(ctx, nil, seqProbe, nil)
}

// How a sequencer call takes the lock.
type seqMode int

const (
	seqProbe seqMode = iota // probe for work outside any transaction first, then try the lock
	seqTry                  // try the lock: the last step found work
	seqWait                 // wait for the lock (Append)
)

// sequence runs steps until a page is not full, on conn (nil: the pool's),
// calling stepped (if not nil) after each step that numbered records.
func (s *Store) sequence(ctx context.Context, conn *pgx.Conn, mode seqMode, stepped func()) (int, error) {
	if mode == seqProbe {
		var waiting bool
		b := &pgx.Batch{}
		b.Queue(stmt("begin"))
		queuePlanner(b)
		b.Queue(stmt("any_unsequenced")).QueryRow(func(row pgx.Row) error { return row.Scan(&waiting) })
		b.Queue(stmt("commit"))
		var q querier = s.pool
		if conn != nil {
			q = conn
		}
		if err := q.SendBatch(ctx, b).Close(); err != nil || !waiting {
			return 0, s.dbErr(ctx, "sequence", err)
		}
	}
	total := 0
	for {
		page, n, err := s.step(ctx, conn, mode == seqWait)
		total += n
		if n > 0 && err == nil && stepped != nil {
			stepped()
		}
		if err != nil || page < s.page {
			return total, err
		}
	}
}

// step is one sequencer transaction in one round trip: the lock, statement number
// (which does nothing without it), the commit. It returns how many records
// it found and how many it numbered or refused.
func (s *Store) step(ctx context.Context, conn *pgx.Conn, wait bool) (page, n int, err error) {
	err = s.onConn(ctx, conn, "sequence", func(conn *pgx.Conn) error {
		var numbered, refused, notified int
		b := &pgx.Batch{}
		b.Queue(stmt("begin"))
		queuePlanner(b)
		if wait {
			b.Queue(stmt("wait_lock"))
			b.Queue(stmt("held"))
		} else {
			b.Queue(stmt("try_lock"))
		}
		b.Queue(stmt("number"), pgx.NamedArgs{"page": s.page}).QueryRow(func(row pgx.Row) error { return row.Scan(&page, &numbered, &refused, &notified) })
		if s.stepHook == nil {
			b.Queue(stmt("commit"))
		}
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "sequence", err)
		}
		n = numbered + refused
		if s.stepHook == nil {
			return nil
		}
		if page > 0 {
			s.stepHook(conn.PgConn().PID())
		}
		_, err := conn.Exec(ctx, stmt("commit"))
		return s.dbErr(ctx, "sequence: commit", err)
	})
	if err != nil {
		return 0, 0, err
	}
	return page, n, nil
}

// poke tells RunSequencer that this process appended: poll soon.
func (s *Store) poke() {
	select {
	case s.appended <- struct{}{}:
	default:
	}
}

// RunSequencer runs the sequencer until ctx ends, on a connection of its own,
// at an interval that adapts to the records it finds. Any number of
// processes may run it: one at a time numbers. A failed step is passed to
// onError (if not nil) and retried after MaxSequencerInterval.
func (s *Store) RunSequencer(ctx context.Context, onError func(error)) {
	s.RunSequencerWaking(ctx, onError, nil)
}

// RunSequencerWaking is RunSequencer that also calls numbered (if not nil),
// which must not block, after each of its steps that numbered records, and
// after a failed one (its commit may have happened): its process wakes its
// own workers at once. This Store's Listeners skip its steps' notifications.
func (s *Store) RunSequencerWaking(ctx context.Context, onError func(error), numbered func()) {
	s.sequencing.Add(1)
	defer s.sequencing.Add(-1)
	var conn *pgx.Conn
	// forget conn's backend, whose pid another process may get once gone.
	forget := func() {
		if numbered != nil && conn != nil {
			s.ownPID.CompareAndSwap(conn.PgConn().PID(), 0)
		}
	}
	defer func() {
		forget()
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	interval, busy := MinSequencerInterval, true
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.appended:
			if interval > s.seqBusy { // backing off, and a record is likely to commit soon
				interval, busy = MinSequencerInterval, true
				timer.Reset(interval)
			}
			continue
		case <-timer.C:
		}
		mode := seqProbe
		if busy {
			mode = seqTry // records came lately: skip the probe
		}
		var n int
		var err error
		if conn == nil || conn.IsClosed() {
			forget()
			conn, err = pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
			if err != nil {
				conn, err = nil, dbError(ctx, "sequencer: connect", err)
			} else if numbered != nil {
				s.ownPID.Store(conn.PgConn().PID())
			}
		}
		if err == nil {
			n, err = s.sequence(ctx, conn, mode, numbered)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if onError != nil {
				onError(err)
			}
			if numbered != nil {
				numbered()
			}
			n = -1
		}
		interval, busy = nextPoll(interval, s.seqBusy, n), n > 0
		timer.Reset(interval)
	}
}

func queuePlanner(b *pgx.Batch) {
	for _, q := range sqlPlanner {
		b.Queue(q)
	}
}

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

// The daemon finds Listen by this shape (store.Listener).
var _ interface {
	Listen(context.Context) (store.Listener, error)
} = (*Store)(nil)

// Listen opens a Listener configured as the store's pool. Errors: ErrUnavailable.
func (s *Store) Listen(ctx context.Context) (store.Listener, error) {
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
