package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// Due implements push.Store. It first runs a sequencer step (Sequence;
// not while this Store runs RunSequencer), then claims in one transaction
// of three round trips on one connection:
//
//  1. begin, read the troubled hosts and lock the probes this claim owns;
//  2. claim up to q.Limit due registrations of pending streams with the
//     lease (SKIP LOCKED: only the rows claimed are locked; Limit+1 are
//     looked for, to tell More), and count the other namespaces' due
//     registrations (then, rarely, move the probes claimed);
//  3. lock the pending streams that look idle (SKIP LOCKED), clear the
//     marker of those still idle in a snapshot taken after the locks, and
//     commit.
//
// The stream rows are locked last, so that they are held for the two
// statements and the commit of one round trip: the sequencer's step, which
// updates the rows of the streams it numbers, waits for them.
//
// Only registrations of pending streams are read, through indexes: an idle
// database costs three index probes that find nothing. See the package
// documentation for why the marker cannot lose a wake-up.
func (s *Store) Due(ctx context.Context, q push.DueQuery) (push.DueBatch, error) {
	if err := q.Validate(); err != nil {
		return push.DueBatch{}, err
	}
	if err := journal.ValidateID("lease owner", q.Owner); err != nil {
		return push.DueBatch{}, err
	}
	// Number what committed since the last step, unless another process
	// is at it, so that scheduler mode (RunOnce alone) needs no sequencer.
	// Not when this Store runs RunSequencer (the daemon): a step commits,
	// and waiting for that flush before every claim slows delivery.
	if s.sequencing.Load() == 0 {
		if _, err := s.sequence(ctx, seqProbe); err != nil {
			return push.DueBatch{}, err
		}
	}
	pooled, err := s.pool.Acquire(ctx)
	if err != nil {
		return push.DueBatch{}, s.dbErr(ctx, "due", err)
	}
	defer pooled.Release()
	conn := pooled.Conn()
	open := false
	defer func() {
		if open { // roll back, or drop a connection that cannot
			if _, rbErr := conn.Exec(context.WithoutCancel(ctx), sqlAbort); rbErr != nil {
				_ = conn.Close(context.WithoutCancel(ctx))
			}
		}
	}()
	var batch push.DueBatch
	b := &pgx.Batch{}
	b.Queue(sqlBegin)
	b.Queue(sqlDuePlanner1)
	b.Queue(sqlDuePlanner2)
	b.Queue(sqlDuePlanner3)
	b.Queue(sqlDueAsyncCommit)
	var troubled []push.Host
	b.Queue(sqlTroubledHosts).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			h, err := scanHost(rows)
			if err != nil {
				return err
			}
			troubled = append(troubled, h)
		}
		return rows.Err()
	})
	probes := map[string]push.Host{} // hosts whose probe this claim owns, as locked
	b.Queue(sqlLockProbes, q.At).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			h, err := scanHost(rows)
			if err != nil {
				return err
			}
			probes[h.Host] = h
		}
		return rows.Err()
	})
	open = true
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return push.DueBatch{}, s.dbErr(ctx, "due: read hosts", err)
	}
	var due int // due rows left unclaimed
	b = &pgx.Batch{}
	capArg, hosts, busy := hostCap(q)
	probeHosts := make([]string, 0, len(probes))
	for h := range probes {
		probeHosts = append(probeHosts, h)
	}
	held := []string{} // not up, and not this claim's probe
	for _, h := range troubled {
		if _, ok := probes[h.Host]; !ok && h.State != push.HostUp {
			held = append(held, h.Host)
		}
	}
	b.Queue(sqlClaim, q.Namespace, q.At, q.Limit, q.Owner, q.LeaseUntil, capArg, hosts, busy, probeHosts, held).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			st, err := scanStatus(rows, true, &due)
			if err != nil {
				return err
			}
			batch.Registrations = append(batch.Registrations, st)
		}
		return rows.Err()
	})
	b.Queue(sqlUnserved, q.Namespace, q.At, held).QueryRow(func(row pgx.Row) error { return row.Scan(&batch.Unserved) })
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return push.DueBatch{}, s.dbErr(ctx, "due", err)
	}
	// due is how many due rows were left unclaimed, of the first
	// Limit+1: only Limit rows are locked, so that concurrent claimers
	// never skip a row this claim locked only to look past the limit.
	batch.More = due > 0
	if err := s.claimedHosts(ctx, conn, q, troubled, probes, &batch); err != nil {
		return push.DueBatch{}, err
	}
	b = &pgx.Batch{}
	b.Queue(sqlClearCandidates)
	b.Queue(sqlClearPending)
	b.Queue(sqlCommit)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return push.DueBatch{}, s.dbErr(ctx, "due: clear idle streams and commit", err)
	}
	open = false
	return batch, nil
}

// hostCap returns sqlClaim's per-host cap parameters: MaxPerHost (nil for no
// cap) and Busy as two arrays.
func hostCap(q push.DueQuery) (capArg *int32, hosts []string, busy []int32) {
	hosts, busy = []string{}, []int32{}
	if q.MaxPerHost <= 0 {
		return nil, hosts, busy
	}
	c := int32(min(q.MaxPerHost, 1<<30))
	for h, n := range q.Busy {
		hosts, busy = append(hosts, h), append(busy, int32(min(n, 1<<30)))
	}
	return &c, hosts, busy
}
