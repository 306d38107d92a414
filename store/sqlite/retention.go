package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/heraldpush/herald/store"
)

// pruneStreams bounds the streams one Prune call visits, so that a batch
// holds the write lock for a few milliseconds however many streams there are.
const pruneStreams = 500

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// Prune implements store.Retention: one write transaction visits at most
// pruneStreams streams, in name order from where the last call stopped (back
// to the first after a whole pass). A dry run visits every stream, as one
// whole pass, and rolls its work back. A batch that removed records gives their pages back to the file
// system (incremental vacuum).
func (s *Store) Prune(ctx context.Context, q store.PruneQuery) (store.PruneReport, error) {
	q, err := q.Validate()
	if err != nil {
		return store.PruneReport{}, err
	}
	cutoff, err := nanos("at", q.Cutoff())
	if err != nil {
		return store.PruneReport{}, err
	}
	s.pruneMu.Lock()
	defer s.pruneMu.Unlock()
	var (
		rep  store.PruneReport
		next string
	)
	from, limit := s.pruneFrom, int64(pruneStreams+1)
	if q.DryRun {
		from, limit = "", -1 // a dry run reports a whole pass (SQLite's LIMIT -1: none)
	}
	err = s.write(ctx, "prune", func(tx *sql.Tx) error {
		type candidate struct {
			stream        string
			head, oldest  int64
			sealed        bool
			registrations int
		}
		cands, err := queryAll(ctx, tx, "prune: list streams", nil, func(sc scanner) (c candidate, err error) {
			err = sc.Scan(&c.stream, &c.head, &c.sealed, &c.oldest, &c.registrations)
			return c, err
		}, stmt("prune_candidates"), from, limit)
		if err != nil {
			return err
		}
		if !q.DryRun && len(cands) > pruneStreams {
			next, cands = cands[pruneStreams].stream, cands[:pruneStreams]
		}
		for _, c := range cands {
			holds, err := pruneHolds(ctx, tx, q, c.stream, c.registrations)
			if err != nil {
				return err
			}
			to, n, bytes, err := pruneUpTo(ctx, tx, c.stream, c.oldest, c.head, holds, q.Limit-rep.Records)
			if err != nil {
				return err
			}
			if to > c.oldest {
				rep = rep.Add(store.PruneReport{Streams: 1, Records: n, Bytes: bytes})
				if _, err := tx.ExecContext(ctx, stmt("prune_records"), c.stream, to); err != nil {
					return translate("prune: delete records", err)
				}
				if _, err := tx.ExecContext(ctx, stmt("prune_mark"), to, c.stream); err != nil {
					return translate("prune: move the low-water mark", err)
				}
			}
			if c.sealed && c.registrations == 0 && to > c.head {
				rep.Removed++
				if _, err := tx.ExecContext(ctx, stmt("prune_stream"), c.stream); err != nil {
					return translate("prune: remove stream", err)
				}
			}
			if c.registrations > 0 {
				res, err := tx.ExecContext(ctx, stmt("prune_evidence"), c.stream, cutoff.Int64, store.EventParked)
				if err != nil {
					return translate("prune: evidence", err)
				}
				n, _ := res.RowsAffected()
				rep.Evidence += int(n)
			}
			if c.registrations > 0 && to > c.oldest { // after the evidence rule, which would take rows of q.At with Retain 0
				if err := s.expire(ctx, tx, c.stream, to, q.At); err != nil {
					return err
				}
			}
			if rep.Records == q.Limit {
				next = c.stream // the batch is full: this stream may hold more
				break
			}
		}
		rep.More = next != ""
		if !rep.More {
			res, err := tx.ExecContext(ctx, stmt("prune_hosts"), cutoff.Int64)
			if err != nil {
				return translate("prune: hosts", err)
			}
			n, _ := res.RowsAffected()
			rep.Hosts = int(n)
		}
		if q.DryRun {
			return errDryRun
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return store.PruneReport{}, err
	}
	if !q.DryRun {
		s.pruneFrom = next
		if rep.Records > 0 || rep.Removed > 0 || rep.Evidence > 0 || rep.Hosts > 0 {
			if _, err := s.w.ExecContext(ctx, stmt("incremental_vacuum")); err != nil {
				return rep, translate("prune: incremental vacuum", err)
			}
		}
	}
	return rep, nil
}

// pruneHolds reads the holds of stream's registrations (store.Holds).
func pruneHolds(ctx context.Context, tx *sql.Tx, q store.PruneQuery, stream string, registrations int) (store.Holds, error) {
	if registrations == 0 {
		return q.Holds(nil), nil
	}
	holders, err := queryAll(ctx, tx, "prune: read cursors", nil, func(sc scanner) (h store.Holder, err error) {
		var (
			next int64
			r    store.Registration
		)
		err = sc.Scan(&next, &r.RetainMax, &r.Namespace)
		h.NextSeq, h.RetainMax = uint64(next), r.RetainBound()
		return h, err
	}, stmt("prune_holders"), stream)
	return q.Holds(holders), err
}

// pruneUpTo returns one stream's new low-water mark, the first seq from
// oldest that holds keep or past the batch's room, with the count and
// payload bytes of those below.
func pruneUpTo(ctx context.Context, tx *sql.Tx, stream string, oldest, head int64, holds store.Holds, room int) (int64, int, int64, error) {
	if head < oldest || room <= 0 {
		return oldest, 0, 0, nil
	}
	rows, err := tx.QueryContext(ctx, stmt("prune_run"), stream, oldest, head+1, room)
	if err != nil {
		return 0, 0, 0, translate("prune: read records", err)
	}
	defer rows.Close()
	to, n, bytes := oldest, 0, int64(0)
	for rows.Next() {
		var seq, at, size int64
		if err := rows.Scan(&seq, &at, &size); err != nil {
			return 0, 0, 0, translate("prune: read records", err)
		}
		if seq != to || !holds.Prunable(uint64(seq), instant(sql.NullInt64{Int64: at, Valid: true})) {
			break // a gap cannot be (the run is contiguous), a kept record ends the run
		}
		to, n, bytes = seq+1, n+1, bytes+size
	}
	return to, n, bytes, translate("prune: read records", rows.Err())
}

// expire moves the cursors of stream's registrations below its new
// low-water mark to it, with the evidence and event of store.Expired.
func (s *Store) expire(ctx context.Context, tx *sql.Tx, stream string, to int64, at time.Time) error {
	behind, err := queryAll(ctx, tx, "prune: read expired cursors", nil, scanStatus, stmt("prune_behind"), stream, to)
	if err != nil {
		return err
	}
	for _, st := range behind {
		ev, e, ok := store.Expired(st.Registration, uint64(to), at)
		if err := addEvidence(ctx, tx, st.Stream, st.ID, ev); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, stmt("expire"), to, ev.Error, st.Stream, st.ID); err != nil {
			return translate("prune: move an expired cursor", err)
		}
		if err := s.event(ctx, tx, e, ok); err != nil {
			return err
		}
	}
	return nil
}

// Streams implements store.Retention.
func (s *Store) Streams(ctx context.Context, q store.StreamQuery) ([]store.StreamInfo, error) {
	limit, err := q.Validate()
	if err != nil {
		return nil, err
	}
	return queryAll(ctx, s.r, "list streams", []store.StreamInfo{}, func(sc scanner) (info store.StreamInfo, err error) {
		var (
			head, oldest int64
			sealed       bool
		)
		err = sc.Scan(&info.Stream, &head, &sealed, &oldest, &info.Registrations, &info.Bytes)
		info.Head, info.OldestSeq = uint64(head), uint64(oldest)
		return info.Fill(sealed), err
	}, stmt("streams"), q.Stream, q.After, limit)
}
