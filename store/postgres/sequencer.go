package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// sequencerLock is the key of the PostgreSQL advisory lock (a transaction
// lock, per database) that elects the one sequencer of a database.
const sequencerLock int64 = 0x68657261_6c645351 // "heraldSQ"

// sequencerPage bounds the records one step numbers, to bound its
// transaction; a full page is followed by another step at once.
const sequencerPage = 10_000

// The runner's polling interval (RunSequencer) adapts to the load. Each
// step costs a commit (one more WAL flush that the application's commits
// queue behind) and about a millisecond of a backend's CPU however few
// records it numbers: at a fixed 5 ms a single writer's ~1,000
// transactions/s made 120-160 steps/s of 3-7 records, which cost 90-290 µs
// of server CPU per transaction and 2-25% of the writer's samples in
// LWLock:WALWrite (issue 15, in the history of BENCHMARKS.md).
// So while records keep coming the interval doubles after a step that
// numbered fewer than sequencerBatch, up to sequencerPollBusy, and halves
// after one that numbered more, down to sequencerPollMin; with none
// coming it doubles up to sequencerPollMax.
const (
	// sequencerPollMin is the interval after an AppendTx of this process
	// woke an idle runner, and the shortest under a heavy load.
	sequencerPollMin = 5 * time.Millisecond
	// sequencerPollBusy (the default of WithSequencerInterval) bounds the
	// wait of a committed record for its seq while records keep coming:
	// at most this plus one step. The 50 ms append-to-receipt p99 of issue
	// 15 decides it: at 20 ms the latency workload's p99 was 3x that of a
	// fixed 5 ms (larger steps also deliver in larger bursts), for a
	// saving of ~6% of a writer's CPU per transaction (issue 15, in the
	// history of BENCHMARKS.md).
	sequencerPollBusy = 10 * time.Millisecond
	// sequencerBatch is the step size worth a step's fixed cost: 64
	// records spread it to a few percent of each record's.
	sequencerBatch = 64
	// sequencerPollMax is what an idle database pays: one index probe of
	// an empty index range per interval.
	sequencerPollMax = 100 * time.Millisecond
)

// nextPoll is RunSequencer's interval after a poll at interval that
// numbered n records (n < 0: the poll failed), busy its longest while
// records keep coming (sequencerPollBusy unless WithSequencerInterval).
func nextPoll(interval, busy time.Duration, n int) time.Duration {
	switch {
	case n < 0:
		return sequencerPollMax
	case n == 0:
		return min(2*interval, sequencerPollMax)
	case n < sequencerBatch:
		return min(2*interval, busy)
	default:
		return min(max(interval/2, sequencerPollMin), busy)
	}
}

// Sequence runs the sequencer once, if no other process is running it: it
// numbers every record committed and not yet numbered, and returns how many
// records it numbered or refused (0 when another process holds the
// sequencer's lock, or nothing was waiting). RunSequencer calls it in a
// loop, and Due calls it before claiming (unless this Store runs
// RunSequencer), so a scheduler that only calls RunOnce needs no daemon. Errors: ErrUnavailable, ErrRetry, *Error.
func (s *Store) Sequence(ctx context.Context) (int, error) {
	return s.sequence(ctx, seqProbe)
}

// How a sequencer call takes the lock.
type seqMode int

const (
	seqProbe seqMode = iota // probe for work outside any transaction first, then try the lock
	seqTry                  // try the lock (work is likely: the last step found some)
	seqWait                 // wait for the lock (Append, whose records must be numbered before it returns)
)

// sequence runs steps until a page is not full, each on a connection of
// the pool.
func (s *Store) sequence(ctx context.Context, mode seqMode) (int, error) {
	return s.sequenceOn(ctx, nil, mode, nil)
}

// sequenceOn is sequence on conn, or on pooled connections if conn is nil,
// calling stepped (if not nil) after each step that numbered or refused
// records committed.
func (s *Store) sequenceOn(ctx context.Context, conn *pgx.Conn, mode seqMode, stepped func()) (int, error) {
	if mode == seqProbe {
		var any bool
		b := &pgx.Batch{}
		b.Queue(sqlBegin)
		queuePlanner(b)
		b.Queue(sqlAnyUnsequenced).QueryRow(func(row pgx.Row) error { return row.Scan(&any) })
		b.Queue(sqlCommit)
		var err error
		if conn != nil {
			err = conn.SendBatch(ctx, b).Close()
		} else {
			err = s.pool.SendBatch(ctx, b).Close()
		}
		if err != nil {
			return 0, s.dbErr(ctx, "sequence", err)
		}
		if !any {
			return 0, nil
		}
	}
	total := 0
	for {
		page, n, err := s.step(ctx, conn, mode == seqWait)
		total += n
		if n > 0 && err == nil && stepped != nil {
			stepped()
		}
		if err != nil || page < s.pageSize() {
			return total, err
		}
	}
}

// step is one sequencer transaction, sent in one round trip: elect
// (advisory lock), then one statement (sqlNumber) numbers the records
// committed since the last step per stream after the head (a final record
// last; records of a sealed stream refused), moves the heads (creating new
// streams' rows), sets the pending markers and notifies once; commit. A step that dies before its commit leaves nothing behind:
// its transaction rolls back. It returns how many records it found (the
// page: sequence runs another step when it was full) and how many it
// numbered or refused.
func (s *Store) step(ctx context.Context, conn *pgx.Conn, wait bool) (page, n int, err error) {
	if conn == nil {
		pooled, err := s.pool.Acquire(ctx)
		if err != nil {
			return 0, 0, s.dbErr(ctx, "sequence", err)
		}
		defer pooled.Release()
		conn = pooled.Conn()
	}
	open := false
	defer func() {
		if open { // roll back, or drop a connection that cannot
			if _, rbErr := conn.Exec(context.WithoutCancel(ctx), sqlAbort); rbErr != nil {
				_ = conn.Close(context.WithoutCancel(ctx))
			}
		}
	}()
	var (
		held             bool
		numbered, refuse int
	)
	b := &pgx.Batch{}
	b.Queue(sqlBegin)
	queuePlanner(b)
	if wait {
		b.Queue(sqlWaitLock, sequencerLock)
		b.Queue(sqlHeld).QueryRow(func(row pgx.Row) error { return row.Scan(&held) })
	} else {
		b.Queue(sqlTryLock, sequencerLock).QueryRow(func(row pgx.Row) error { return row.Scan(&held) })
	}
	b.Queue(sqlNumber, s.pageSize()).QueryRow(func(row pgx.Row) error {
		var notified int
		return row.Scan(&page, &numbered, &refuse, &notified)
	})
	if s.stepHook == nil {
		b.Queue(sqlCommit)
	}
	open = true
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return 0, 0, s.dbErr(ctx, "sequence", err)
	}
	if s.stepHook != nil {
		if held && page > 0 {
			s.stepHook(conn.PgConn().PID())
		}
		if _, err := conn.Exec(ctx, sqlCommit); err != nil {
			return 0, 0, s.dbErr(ctx, "sequence: commit", err)
		}
	}
	open = false
	if !held {
		return 0, 0, nil // another sequencer is at work
	}
	return page, numbered + refuse, nil
}

// ownPIDOf is the backend process id of the sequencer's connection, 0 for
// none.
func (s *Store) ownPIDOf(conn *pgx.Conn) uint32 {
	if conn == nil {
		return 0
	}
	return conn.PgConn().PID()
}

// pageSize is the most records one step numbers: sequencerPage, unless a
// test set another.
func (s *Store) pageSize() int {
	if s.page < 1 {
		return sequencerPage
	}
	return s.page
}

// poke tells RunSequencer that this process appended (AppendTx): it polls
// at its shortest interval again.
func (s *Store) poke() {
	select {
	case s.appended <- struct{}{}:
	default:
	}
}

// RunSequencer runs the sequencer until ctx ends: while records keep
// coming it polls every 5 to 10 ms (WithSequencerInterval), less often
// the fewer records a step finds (so that each step numbers many), backing
// off to every 100 ms when none come, and polling after 5 ms when this
// Store's AppendTx appended while it was backing off. Any number of
// processes may run it: one at a time numbers (the others find the lock
// taken and skip). It runs on a connection of its own (outside the pool,
// so that it never waits behind deliveries for one), reopened after a
// failure. A failed step is passed to onError (if not nil) and retried
// after 100 ms. It returns when ctx ends.
func (s *Store) RunSequencer(ctx context.Context, onError func(error)) {
	s.runSequencer(ctx, onError, nil)
}

// RunSequencerWaking is RunSequencer that also calls numbered after each
// of its steps that numbered records commits, and after a failed step
// (its commit may have happened), so that the process that runs it wakes
// its own workers at once, without the round trip of the step's
// notification through the database. The notification is still sent, for
// other processes; this Store's Listeners skip those of its own steps
// while it runs (each step wakes the process once). numbered must not
// block.
func (s *Store) RunSequencerWaking(ctx context.Context, onError func(error), numbered func()) {
	s.runSequencer(ctx, onError, numbered)
}

func (s *Store) runSequencer(ctx context.Context, onError func(error), numbered func()) {
	s.sequencing.Add(1)
	defer s.sequencing.Add(-1)
	var conn *pgx.Conn
	defer func() {
		if numbered != nil {
			s.ownPID.CompareAndSwap(s.ownPIDOf(conn), 0)
		}
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	interval, busy := sequencerPollMin, true
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.appended:
			if interval > s.seqBusy {
				// Backing off: a record is likely to commit soon.
				interval, busy = sequencerPollMin, true
				timer.Reset(interval)
			}
			continue
		case <-timer.C:
		}
		mode := seqProbe
		if busy {
			mode = seqTry // records came lately: skip the probe
		}
		var (
			n   int
			err error
		)
		if conn == nil || conn.IsClosed() {
			if numbered != nil {
				// The backend is gone and its pid may be reused by
				// another process's: skip nobody's until reconnected.
				s.ownPID.CompareAndSwap(s.ownPIDOf(conn), 0)
			}
			conn, err = pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
			if err != nil {
				conn, err = nil, dbError(ctx, "sequencer: connect", err)
			} else if numbered != nil {
				s.ownPID.Store(conn.PgConn().PID()) // its steps' notifications: skipped by Listeners
			}
		}
		if err == nil {
			n, err = s.sequenceOn(ctx, conn, mode, numbered)
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

// queuePlanner queues the planner settings of the sequencer's transaction:
// Due's (sqlDuePlanner1…3). The planner cannot estimate a snapshot's
// transactions: its guesses would have it scan herald_record whole, or
// JIT-compile a step of a few records for hundreds of milliseconds.
func queuePlanner(b *pgx.Batch) {
	b.Queue(sqlDuePlanner1)
	b.Queue(sqlDuePlanner2)
	b.Queue(sqlDuePlanner3)
}
