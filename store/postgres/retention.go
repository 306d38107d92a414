package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// pruneStreams bounds the streams one Prune call visits.
const pruneStreams = 200

// errStop ends a loop over rows early, or rolls a dry run back.
var errStop = errors.New("stop")

// Prune implements store.Retention. It visits streams in name order from
// where this Store's last call stopped, at most pruneStreams of them and
// q.Limit records; a dry run visits all and rolls each transaction back.
// A stream another transaction locks waits for the next call; refused
// records go at the retention age.
func (s *Store) Prune(ctx context.Context, q store.PruneQuery) (store.PruneReport, error) {
	q, err := q.Validate()
	if err != nil {
		return store.PruneReport{}, err
	}
	s.pruneMu.Lock()
	defer s.pruneMu.Unlock()
	from, limit := s.pruneFrom, pruneStreams+1
	if q.DryRun {
		from, limit = "", maxSeq // a dry run reports a whole pass
	}
	names, err := query(ctx, s, "prune: list streams", nil, pgx.RowTo[string], stmt("prune_candidates"), pgx.NamedArgs{"from": from, "limit": limit})
	if err != nil {
		return store.PruneReport{}, err
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
		if rep = rep.Add(one); rep.Records >= q.Limit {
			next = name // it may hold more: the next call starts with it
			break
		}
	}
	if !q.DryRun {
		s.pruneFrom, rep.More = next, next != ""
	}
	if !rep.More {
		sql := stmt("prune_hosts")
		if q.DryRun {
			sql = stmt("count_prunable_hosts")
		}
		if err := s.pool.QueryRow(ctx, sql, pgx.NamedArgs{"cutoff": q.Cutoff()}).Scan(&rep.Hosts); err != nil {
			return rep, s.dbErr(ctx, "prune hosts", err)
		}
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
			holders      []store.Holder
		)
		err := tx.QueryRow(ctx, stmt("prune_lock"), pgx.NamedArgs{"stream": name}).Scan(&head, &sealed, &oldest)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // locked (next pass) or removed meanwhile
		}
		if err == nil {
			holders, err = txRows(ctx, tx, func(row pgx.CollectableRow) (h store.Holder, err error) {
				var r store.Registration
				err = row.Scan(&h.NextSeq, (*int64)(&r.RetainMax), &r.Namespace)
				h.RetainMax = r.RetainBound()
				return h, err
			}, stmt("prune_holders"), pgx.NamedArgs{"stream": name})
		}
		if err != nil {
			return s.dbErr(ctx, "prune: lock stream and read cursors", err)
		}
		holds, to := q.Holds(holders), oldest
		if head >= oldest && room > 0 {
			var (
				seq, size int64
				at        time.Time
			)
			rows, err := tx.Query(ctx, stmt("prune_run"), pgx.NamedArgs{"stream": name, "from_seq": oldest, "to_seq": head + 1, "limit": room})
			if err == nil {
				_, err = pgx.ForEachRow(rows, []any{&seq, &at, &size}, func() error {
					if seq != to || !holds.Prunable(uint64(seq), at) {
						return errStop // the run is contiguous; a kept record ends it
					}
					to, rep.Records, rep.Bytes = seq+1, rep.Records+1, rep.Bytes+size
					return nil
				})
			}
			if err != nil && !errors.Is(err, errStop) {
				return s.dbErr(ctx, "prune: read records", err)
			}
		}
		regs := len(holders)
		count := func(n *int) func(pgconn.CommandTag) error {
			return func(ct pgconn.CommandTag) error { *n += int(ct.RowsAffected()); return nil }
		}
		b := &pgx.Batch{}
		if to > oldest {
			rep.Streams = 1
			b.Queue(stmt("prune_records"), pgx.NamedArgs{"stream": name, "to_seq": to})
			b.Queue(stmt("prune_mark"), pgx.NamedArgs{"stream": name, "to_seq": to})
		}
		b.Queue(stmt("prune_refused"), pgx.NamedArgs{"stream": name, "cutoff": cutoff}).Exec(count(&rep.Records))
		if sealed && regs == 0 && to > head {
			b.Queue(stmt("prune_stream"), pgx.NamedArgs{"stream": name}).Exec(count(&rep.Removed))
		}
		if regs > 0 {
			b.Queue(stmt("prune_evidence"), pgx.NamedArgs{"stream": name, "cutoff": cutoff, "parked": store.EventParked}).Exec(count(&rep.Evidence))
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "prune "+name, err)
		}
		if regs > 0 && to > oldest && !q.DryRun { // after the evidence rule, which would take rows of q.At with Retain 0
			if err := s.expire(ctx, tx, name, to, q.At); err != nil {
				return err
			}
		}
		if q.DryRun {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return store.PruneReport{}, err
	}
	return rep, nil
}

// expire moves the cursors of stream's registrations below its new
// low-water mark to it, with the evidence and event of store.Expired.
func (s *Store) expire(ctx context.Context, tx pgx.Tx, stream string, to int64, at time.Time) error {
	behind, err := txRows(ctx, tx, func(row pgx.CollectableRow) (store.Status, error) {
		return scanStatus(row)
	}, stmt("prune_behind"), pgx.NamedArgs{"stream": stream, "to_seq": to})
	if err != nil {
		return s.dbErr(ctx, "prune: read expired cursors", err)
	}
	for _, st := range behind {
		ev, e, ok := store.Expired(st.Registration, uint64(to), at)
		b := &pgx.Batch{}
		b.Queue(stmt("expire"), pgx.NamedArgs{"stream": st.Stream, "id": st.ID, "to_seq": to, "error": ev.Error})
		queueEvidence(b, ev)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "prune: move an expired cursor", err)
		}
		if err := s.event(ctx, tx, e, ok); err != nil {
			return err
		}
	}
	return nil
}

// txRows reads a query's rows in tx with scan.
func txRows[T any](ctx context.Context, tx pgx.Tx, scan pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scan)
}

// Streams implements store.Retention. Retained bytes are summed over
// records; the records waiting for the sequencer are counted, and their
// streams listed, once they have a row of their own or not.
func (s *Store) Streams(ctx context.Context, q store.StreamQuery) ([]store.StreamInfo, error) {
	limit, err := q.Validate()
	if err != nil {
		return nil, err
	}
	if !validText(q.After) {
		return nil, journal.Invalid("after", "is not valid UTF-8 text")
	}
	infos, err := s.streamRows(ctx, q, limit)
	if err != nil {
		return nil, err
	}
	waiting, err := s.unnumbered(ctx, q.Stream)
	if err != nil {
		return nil, err
	}
	for i, info := range infos {
		infos[i].Unnumbered = waiting[info.Stream].Records
		delete(waiting, info.Stream)
	}
	for name, w := range waiting {
		if name > q.After {
			infos = append(infos, store.StreamInfo{Stream: name, OldestSeq: 1, Unnumbered: w.Records})
		}
	}
	slices.SortFunc(infos, func(a, b store.StreamInfo) int { return strings.Compare(a.Stream, b.Stream) })
	return infos[:min(len(infos), limit)], nil
}

// unnumbered returns the records waiting for the sequencer, by stream (only
// stream's, or every stream's for ""), each store.Unnumbered with Streams 1.
func (s *Store) unnumbered(ctx context.Context, stream string) (map[string]store.Unnumbered, error) {
	out := map[string]store.Unnumbered{}
	b := &pgx.Batch{}
	b.Queue(stmt("begin"))
	queuePlanner(b)
	b.Queue(stmt("unnumbered"), pgx.NamedArgs{"stream": stream}).Query(func(rows pgx.Rows) error {
		var (
			name string
			w    = store.Unnumbered{Streams: 1}
		)
		_, err := pgx.ForEachRow(rows, []any{&name, &w.Records, &w.Oldest}, func() error {
			w.Oldest = w.Oldest.UTC()
			out[name] = w
			return nil
		})
		return err
	})
	b.Queue(stmt("commit"))
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, s.dbErr(ctx, "count the records waiting to be numbered", err)
	}
	return out, nil
}

// streamRows lists the streams with a row, as Streams asks.
func (s *Store) streamRows(ctx context.Context, q store.StreamQuery, limit int) ([]store.StreamInfo, error) {
	return query(ctx, s, "list streams", []store.StreamInfo{}, func(row pgx.CollectableRow) (store.StreamInfo, error) {
		var (
			info   store.StreamInfo
			sealed bool
		)
		err := row.Scan(&info.Stream, &info.Head, &sealed, &info.OldestSeq, &info.Registrations, &info.Bytes)
		return info.Fill(sealed), err
	}, stmt("streams"), pgx.NamedArgs{"stream": q.Stream, "after": q.After, "limit": limit})
}
