package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// Due implements push.Store (package doc, "Idle costs nothing" and
// "Claiming and fencing"): a sequencer step, then one transaction of three
// round trips: begin, read the troubled hosts and lock the probes this
// claim owns; claim, and count the other namespaces' due registrations
// (then, rarely, move the probes claimed); clear the idle streams' markers
// and commit.
func (s *Store) Due(ctx context.Context, q push.DueQuery) (push.DueBatch, error) {
	if err := q.Validate(); err != nil {
		return push.DueBatch{}, err
	}
	if err := journal.ValidateID("lease owner", q.Owner); err != nil {
		return push.DueBatch{}, err
	}
	if s.sequencing.Load() == 0 {
		if _, err := s.sequence(ctx, nil, seqProbe, nil); err != nil {
			return push.DueBatch{}, err
		}
	}
	var batch push.DueBatch
	err := s.onConn(ctx, nil, "due", func(conn *pgx.Conn) error {
		var troubled, locked []push.Host
		b := &pgx.Batch{}
		b.Queue(sqlBegin)
		queuePlanner(b)
		b.Queue(sqlDueAsyncCommit)
		b.Queue(sqlTroubledHosts).Query(appendTo(&troubled, rowTo(scanHost)))
		b.Queue(sqlLockProbes, q.At).Query(appendTo(&locked, rowTo(scanHost)))
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "due: read hosts", err)
		}
		hosts, probes := map[string]push.Host{}, map[string]bool{} // the troubled, with the probes this claim owns as locked
		held, probeHosts := []string{}, []string{}
		for _, h := range troubled {
			hosts[h.Host] = h
		}
		for _, h := range locked {
			hosts[h.Host], probes[h.Host], probeHosts = h, true, append(probeHosts, h.Host)
		}
		for _, h := range hosts {
			if !probes[h.Host] && h.State != push.HostUp {
				held = append(held, h.Host)
			}
		}
		var capArg *int32 // the per-host cap, and Busy as two arrays
		busyHosts, busy := []string{}, []int32{}
		if q.MaxPerHost > 0 {
			capArg = new(int32(min(q.MaxPerHost, 1<<30)))
			for h, n := range q.Busy {
				busyHosts, busy = append(busyHosts, h), append(busy, int32(min(n, 1<<30)))
			}
		}
		var unclaimed int // of the first Limit+1 due rows: only Limit are locked
		b = &pgx.Batch{}
		b.Queue(sqlClaim, q.Namespace, q.At, q.Limit, q.Owner, q.LeaseUntil, capArg, busyHosts, busy, probeHosts, held).Query(
			appendTo(&batch.Registrations, func(row pgx.CollectableRow) (push.Status, error) { return scanStatus(row, &unclaimed) }))
		b.Queue(sqlUnserved, q.Namespace, q.At, held).QueryRow(func(row pgx.Row) error { return row.Scan(&batch.Unserved) })
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "due", err)
		}
		batch.More = unclaimed > 0
		if err := s.claimedHosts(ctx, conn, q, hosts, probes, &batch); err != nil {
			return err
		}
		b = &pgx.Batch{}
		b.Queue(sqlClearCandidates)
		b.Queue(sqlClearPending)
		b.Queue(sqlCommit)
		return s.dbErr(ctx, "due: clear idle streams and commit", conn.SendBatch(ctx, b).Close())
	})
	if err != nil {
		return push.DueBatch{}, err
	}
	return batch, nil
}
