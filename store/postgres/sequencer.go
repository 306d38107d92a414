package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// sequencerLock is the key of the PostgreSQL advisory lock (a transaction
// lock, per database) that elects the one sequencer of a database.
const sequencerLock int64 = 0x68657261_6c645351 // "heraldSQ"

// sequencerPage bounds the records one step numbers, to bound its
// transaction; a full page is followed by another step at once.
const sequencerPage = 10_000

// The runner's polling interval (RunSequencer): the shortest while records
// keep coming, doubling while none come, up to the longest. The shortest
// bounds the latency a record waits for its seq, and how often the
// sequencer commits: each step's commit is one more WAL flush that the
// application's commits may queue behind (bench/ producer workload, the
// LWLock:WALWrite waits: 38% of one writer's samples at 2 ms, 20-27% at
// 10 ms). The longest is what an idle database pays: one index probe of
// an empty partial index per interval.
const (
	sequencerPollMin = 5 * time.Millisecond
	sequencerPollMax = 100 * time.Millisecond
)

// Sequence runs the sequencer once, if no other process is running it: it
// gives every record committed without a seq its seq, and returns how many
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
	return s.sequenceOn(ctx, nil, mode)
}

// sequenceOn is sequence on conn, or on pooled connections if conn is nil.
func (s *Store) sequenceOn(ctx context.Context, conn *pgx.Conn, mode seqMode) (int, error) {
	if mode == seqProbe {
		var any bool
		var row pgx.Row
		if conn != nil {
			row = conn.QueryRow(ctx, sqlAnyUnsequenced)
		} else {
			row = s.pool.QueryRow(ctx, sqlAnyUnsequenced)
		}
		if err := row.Scan(&any); err != nil {
			return 0, s.dbErr(ctx, "sequence", err)
		}
		if !any {
			return 0, nil
		}
	}
	total := 0
	for {
		n, err := s.step(ctx, conn, mode == seqWait)
		total += n
		if err != nil || n < sequencerPage {
			return total, err
		}
	}
}

// candidate is a committed record without a seq.
type candidate struct {
	pos    int64
	stream string
	final  bool
}

// step is one sequencer transaction: elect (advisory lock), read the
// committed records without a seq, number them per stream after the head
// (a final record last; records of a sealed stream refused), move the heads
// and set the pending markers, notify once, commit. A step that dies before
// its commit leaves nothing behind: its transaction rolls back. It runs on
// one connection, in three round trips when it has work.
func (s *Store) step(ctx context.Context, conn *pgx.Conn, wait bool) (n int, err error) {
	if conn == nil {
		pooled, err := s.pool.Acquire(ctx)
		if err != nil {
			return 0, s.dbErr(ctx, "sequence", err)
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
		got   bool
		cands []candidate
	)
	b := &pgx.Batch{}
	b.Queue(sqlBegin)
	lock := sqlTryLock
	if wait {
		lock = sqlLock
	}
	b.Queue(lock, sequencerLock).QueryRow(func(row pgx.Row) error { return row.Scan(&got) })
	// A statement of its own, so a snapshot of its own: taken after the
	// lock was granted, it sees everything the previous holder committed.
	// (When the lock was not granted, its rows are not used.)
	b.Queue(sqlUnsequenced, sequencerPage).Query(func(rows pgx.Rows) (err error) {
		cands, err = collectCandidates(rows)
		return err
	})
	open = true
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return 0, s.dbErr(ctx, "sequence: read", err)
	}
	if !got || len(cands) == 0 {
		return 0, nil // the deferred ROLLBACK ends it: another sequencer is at work, or none is needed
	}
	if len(cands) == sequencerPage {
		// The page may stop between a final record and records committed
		// with it: read the rest of those streams.
		var sealing []string
		for _, c := range cands {
			if c.final {
				sealing = append(sealing, c.stream)
			}
		}
		if len(sealing) > 0 {
			rows, err := conn.Query(ctx, sqlUnsequencedOf, cands[len(cands)-1].pos, sealing)
			if err != nil {
				return 0, s.dbErr(ctx, "sequence: read", err)
			}
			more, err := collectCandidates(rows)
			if err != nil {
				return 0, s.dbErr(ctx, "sequence: read", err)
			}
			cands = append(cands, more...)
		}
	}
	plan, err := s.plan(ctx, conn, cands)
	if err != nil {
		return 0, err
	}
	b = &pgx.Batch{}
	if len(plan.assignPos) > 0 {
		b.Queue(sqlAssign, plan.assignPos, plan.assignSeq)
	}
	if len(plan.refusePos) > 0 {
		b.Queue(sqlRefuse, plan.refusePos, plan.refuseWhy)
	}
	if len(plan.streams) > 0 {
		b.Queue(sqlMoveHeads, plan.streams, plan.heads, plan.finals)
		if s.notify {
			b.Queue(sqlNotify, strconv.Itoa(len(plan.assignPos)))
		}
	}
	if s.stepHook == nil {
		b.Queue(sqlCommit)
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return 0, s.dbErr(ctx, "sequence: write", err)
	}
	if s.stepHook != nil {
		s.stepHook(conn.PgConn().PID())
		if _, err := conn.Exec(ctx, sqlCommit); err != nil {
			return 0, s.dbErr(ctx, "sequence: commit", err)
		}
	}
	open = false
	return len(cands), nil
}

func collectCandidates(rows pgx.Rows) ([]candidate, error) {
	var c candidate
	var out []candidate
	_, err := pgx.ForEachRow(rows, []any{&c.pos, &c.stream, &c.final}, func() error {
		out = append(out, c)
		return nil
	})
	return out, err
}

// stepPlan is what one step writes.
type stepPlan struct {
	assignPos, assignSeq []int64
	refusePos            []int64
	refuseWhy            []string
	streams              []string // whose head moved
	heads                []int64
	finals               []*int64
}

// plan locks the candidates' stream rows (creating the missing ones) and
// decides every candidate's fate. Per stream, in insertion order, non-final
// records first and then the first final record, numbered head+1…; a
// second final record, and every record of a stream already sealed, is
// refused.
func (s *Store) plan(ctx context.Context, conn *pgx.Conn, cands []candidate) (stepPlan, error) {
	byStream := map[string][]candidate{}
	for _, c := range cands {
		byStream[c.stream] = append(byStream[c.stream], c)
	}
	names := make([]string, 0, len(byStream))
	for st := range byStream {
		names = append(names, st)
	}
	slices.Sort(names)
	type row struct {
		head  int64
		final *int64
	}
	rows := map[string]row{}
	b := &pgx.Batch{}
	b.Queue(sqlEnsureStreams, names)
	b.Queue(sqlLockStreams, names).Query(func(rs pgx.Rows) error {
		var (
			name string
			r    row
		)
		_, err := pgx.ForEachRow(rs, []any{&name, &r.head, &r.final}, func() error {
			rows[name] = r
			return nil
		})
		return err
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return stepPlan{}, s.dbErr(ctx, "sequence: lock streams", err)
	}
	var p stepPlan
	refuse := func(c candidate, why string) {
		p.refusePos = append(p.refusePos, c.pos)
		p.refuseWhy = append(p.refuseWhy, why)
	}
	for _, name := range names {
		r, ok := rows[name]
		if !ok {
			return stepPlan{}, &Error{Op: "sequence", Message: fmt.Sprintf("stream %q has no row after it was created", name)}
		}
		recs := byStream[name]
		if r.final != nil {
			for _, c := range recs {
				refuse(c, fmt.Sprintf("committed after the stream's final record #%d was sequenced", *r.final))
			}
			continue
		}
		head := r.head
		var first *candidate
		for i, c := range recs {
			switch {
			case !c.final:
				head++
				p.assignPos, p.assignSeq = append(p.assignPos, c.pos), append(p.assignSeq, head)
			case first == nil:
				first = &recs[i]
			}
		}
		var final *int64
		if first != nil {
			head++
			p.assignPos, p.assignSeq = append(p.assignPos, first.pos), append(p.assignSeq, head)
			final = &head
			for _, c := range recs {
				if c.final && c.pos != first.pos {
					refuse(c, fmt.Sprintf("another final record of the stream, #%d, was sequenced first", head))
				}
			}
		}
		if head != r.head {
			p.streams, p.heads, p.finals = append(p.streams, name), append(p.heads, head), append(p.finals, final)
		}
	}
	return p, nil
}

// poke tells RunSequencer that this process appended (AppendTx): it polls
// at its shortest interval again.
func (s *Store) poke() {
	select {
	case s.appended <- struct{}{}:
	default:
	}
}

// RunSequencer runs the sequencer until ctx ends: it polls for committed
// records without a seq every 5 ms while records keep coming, backing off
// to every 100 ms when none come, and sooner when this Store's AppendTx
// appended. Any number of processes may run it: one at a time numbers (the
// others find the lock taken and skip). It runs on a connection of its own
// (outside the pool, so that it never waits behind deliveries for one),
// reopened after a failure. A failed step is passed to onError (if not nil)
// and retried at the next poll. It returns when ctx ends.
func (s *Store) RunSequencer(ctx context.Context, onError func(error)) {
	s.sequencing.Add(1)
	defer s.sequencing.Add(-1)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	interval := sequencerPollMin
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.appended:
			interval = sequencerPollMin
			timer.Reset(interval)
			continue
		case <-timer.C:
		}
		mode := seqProbe
		if interval == sequencerPollMin {
			mode = seqTry // records came lately: skip the probe
		}
		var (
			n   int
			err error
		)
		if conn == nil || conn.IsClosed() {
			conn, err = pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
			if err != nil {
				conn, err = nil, dbError(ctx, "sequencer: connect", err)
			}
		}
		if err == nil {
			n, err = s.sequenceOn(ctx, conn, mode)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if onError != nil {
				onError(err)
			}
			interval = sequencerPollMax
		case n > 0:
			interval = sequencerPollMin
		default:
			interval = min(2*interval, sequencerPollMax)
		}
		timer.Reset(interval)
	}
}
