package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

var _ store.Retention = (*Store)(nil)

// pruneStreams bounds the streams one Prune call visits.
const pruneStreams = 200

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// Prune implements store.Retention. It visits streams in name order from
// where this Store's last call stopped (back to the first after a whole
// pass), at most pruneStreams of them and q.Limit records, each stream in a
// short transaction of its own that locks the stream row (SKIP LOCKED: a
// stream locked by an append or a sweep waits for the next pass). A dry run
// does the same and rolls each transaction back.
func (s *Store) Prune(ctx context.Context, q store.PruneQuery) (store.PruneReport, error) {
	q, err := q.Validate()
	if err != nil {
		return store.PruneReport{}, err
	}
	s.pruneMu.Lock()
	defer s.pruneMu.Unlock()
	from := s.pruneFrom
	if q.DryRun {
		from = ""
	}
	limit := pruneStreams + 1
	if q.DryRun {
		limit = maxSeq // a dry run reports a whole pass
	}
	rows, err := s.pool.Query(ctx, sqlPruneCandidates, from, limit)
	if err != nil {
		return store.PruneReport{}, s.dbErr(ctx, "prune: list streams", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return store.PruneReport{}, s.dbErr(ctx, "prune: list streams", err)
	}
	var rep store.PruneReport
	next := ""
	if !q.DryRun && len(names) > pruneStreams {
		next, names = names[pruneStreams], names[:pruneStreams]
	}
	for _, name := range names {
		one, err := s.pruneStream(ctx, name, q, q.Limit-rep.Records)
		if err != nil {
			return rep, err
		}
		rep = rep.Add(one)
		if rep.Records >= q.Limit {
			next = name // it may hold more: the next call starts with it
			break
		}
	}
	if !q.DryRun {
		s.pruneFrom = next
		rep.More = next != ""
	}
	return rep, nil
}

// pruneStream applies the rules to one stream in one transaction.
func (s *Store) pruneStream(ctx context.Context, name string, q store.PruneQuery, room int) (store.PruneReport, error) {
	var rep store.PruneReport
	cutoff := q.Cutoff()
	err := s.inTx(ctx, "prune "+name, func(tx pgx.Tx) error {
		rep = store.PruneReport{}
		var (
			head, oldest int64
			sealed       bool
		)
		err := tx.QueryRow(ctx, sqlPruneLock, name).Scan(&head, &sealed, &oldest)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // locked (next pass) or removed meanwhile
		}
		if err != nil {
			return s.dbErr(ctx, "prune: lock stream", err)
		}
		var (
			low  *int64
			regs int
		)
		if err := tx.QueryRow(ctx, sqlPruneLow, name).Scan(&low, &regs); err != nil {
			return s.dbErr(ctx, "prune: read cursors", err)
		}
		to := oldest
		if lowest := head + 1; low == nil || *low > lowest {
			low = &lowest
		}
		if *low > oldest && room > 0 {
			rows, err := tx.Query(ctx, sqlPruneRun, name, oldest, *low, room)
			if err != nil {
				return s.dbErr(ctx, "prune: read records", err)
			}
			for rows.Next() {
				var (
					seq, size int64
					at        time.Time
				)
				if err := rows.Scan(&seq, &at, &size); err != nil {
					rows.Close()
					return s.dbErr(ctx, "prune: read records", err)
				}
				if seq != to || at.After(cutoff) {
					break // the run is contiguous; a young record ends it
				}
				to, rep.Records, rep.Bytes = seq+1, rep.Records+1, rep.Bytes+size
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return s.dbErr(ctx, "prune: read records", err)
			}
		}
		b := &pgx.Batch{}
		if to > oldest {
			rep.Streams = 1
			b.Queue(sqlPruneRecords, name, to)
			b.Queue(sqlPruneMark, name, to)
		}
		b.Queue(sqlPruneRefused, name, cutoff).Exec(func(ct pgconn.CommandTag) error {
			rep.Records += int(ct.RowsAffected())
			return nil
		})
		if sealed && regs == 0 && to > head {
			b.Queue(sqlPruneStream, name).Exec(func(ct pgconn.CommandTag) error {
				rep.Removed = int(ct.RowsAffected())
				return nil
			})
		}
		if regs > 0 {
			b.Queue(sqlPruneEvidence, name, cutoff, push.EventParked).Exec(func(ct pgconn.CommandTag) error {
				rep.Evidence = int(ct.RowsAffected())
				return nil
			})
		}
		if b.Len() > 0 {
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return s.dbErr(ctx, "prune "+name, err)
			}
		}
		if q.DryRun {
			return errDryRun
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return store.PruneReport{}, err
	}
	return rep, nil
}

// Streams implements store.Retention. Retained bytes are summed over the
// stream's records: cheap for an operator's look at a few streams, a scan of
// the journal for a listing of all of them.
func (s *Store) Streams(ctx context.Context, q store.StreamQuery) ([]store.StreamInfo, error) {
	limit, err := push.ListLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	if q.Stream != "" {
		if err := journal.ValidateStream(q.Stream); err != nil {
			return nil, err
		}
	}
	rows, err := s.pool.Query(ctx, sqlStreams, q.Stream, q.After, limit)
	if err != nil {
		return nil, s.dbErr(ctx, "list streams", err)
	}
	defer rows.Close()
	out := []store.StreamInfo{}
	for rows.Next() {
		var (
			info                 store.StreamInfo
			head, oldest, regs64 int64
			sealed               bool
		)
		if err := rows.Scan(&info.Stream, &head, &sealed, &oldest, &regs64, &info.Bytes); err != nil {
			return nil, s.dbErr(ctx, "list streams", err)
		}
		info.Head, info.OldestSeq, info.Registrations = uint64(head), uint64(oldest), int(regs64)
		info.Records = info.Head + 1 - info.OldestSeq
		if sealed {
			info.FinalSeq = info.Head
		}
		out = append(out, info)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(ctx, "list streams", err)
	}
	return out, nil
}
