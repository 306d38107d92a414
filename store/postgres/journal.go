package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/journal"
)

// Append implements journal.Journal in a transaction of its own. See
// AppendTx for how seqs are assigned.
func (s *Store) Append(ctx context.Context, stream string, entries ...journal.Entry) ([]journal.Record, error) {
	entries, err := journal.ValidateEntries(stream, entries, s.maxPayload)
	if err != nil {
		return nil, err
	}
	var out []journal.Record
	err = s.inTx(ctx, "append", func(tx pgx.Tx) (err error) {
		out, err = s.appendTx(ctx, tx, stream, entries)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AppendTx appends entries to stream inside the caller's transaction tx, so
// that the records commit or roll back with the caller's own writes (the
// transactional outbox). Semantics, results and errors are Append's; the
// records are visible to readers, and their seqs final, only once tx
// commits.
//
// Seqs are assigned under the stream's row lock, taken in tx: a concurrent
// append to the same stream waits until tx commits or rolls back, so seqs
// are gapless and commit in order (the package doc, "Appending: gapless,
// commit-ordered seqs"). Keep tx short after appending: it holds that lock.
//
// An error from AppendTx (bad input, conflict, sealed stream) leaves tx
// usable: nothing was written in it by the failed call. A database failure
// may have aborted tx; then roll it back. tx should run at READ COMMITTED,
// PostgreSQL's default; under REPEATABLE READ or SERIALIZABLE a concurrent
// append to the same stream makes it fail with ErrRetry.
func (s *Store) AppendTx(ctx context.Context, tx pgx.Tx, stream string, entries ...journal.Entry) ([]journal.Record, error) {
	if tx == nil {
		return nil, journal.Invalid("tx", "is nil")
	}
	entries, err := journal.ValidateEntries(stream, entries, s.maxPayload)
	if err != nil {
		return nil, err
	}
	return s.appendTx(ctx, tx, stream, entries)
}

// stored is what the id lookup returns of an existing record: everything
// but the payload, which equals the entry's when the digests match.
type stored struct {
	journal.Record
	digest []byte
}

// appendTx appends validated entries in tx, in two round trips: (1) create
// and lock the stream row, read its head, look the ids up; (2) insert the
// new records and move the head, in one statement.
func (s *Store) appendTx(ctx context.Context, tx pgx.Tx, stream string, entries []journal.Entry) ([]journal.Record, error) {
	ids := make([]string, len(entries))
	digests := make([][]byte, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
		d := journal.Digest(stream, e)
		digests[i] = d[:]
	}

	var (
		head     int64
		finalSeq *int64
		existing = map[string]stored{}
	)
	b := &pgx.Batch{}
	b.Queue(sqlEnsureStream, stream)
	b.Queue(sqlLockStream, stream).QueryRow(func(row pgx.Row) error { return row.Scan(&head, &finalSeq) })
	b.Queue(sqlLookupIDs, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var r stored
			var seq int64
			if err := rows.Scan(&r.ID, &r.Stream, &seq, &r.Kind, &r.ContentType, &r.Final, &r.AppendedAt, &r.digest); err != nil {
				return err
			}
			r.Seq, r.AppendedAt = uint64(seq), r.AppendedAt.UTC()
			existing[r.ID] = r
		}
		return rows.Err()
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, s.dbErr(ctx, "append: lock stream "+stream, err)
	}

	// Check everything before writing anything: a batch is all-or-nothing.
	out := make([]journal.Record, len(entries))
	var fresh []int
	for i, e := range entries {
		old, ok := existing[e.ID]
		if !ok {
			fresh = append(fresh, i)
			continue
		}
		if old.Stream != stream || !bytes.Equal(old.digest, digests[i]) {
			return nil, s.conflict(ctx, tx, stream, e)
		}
		rec := old.Record
		rec.Payload = clonePayload(e.Payload)
		out[i] = rec
	}
	if len(fresh) == 0 {
		return out, nil
	}
	if finalSeq != nil {
		return nil, &journal.SealedError{Stream: stream, FinalSeq: uint64(*finalSeq)}
	}

	at := s.stamp()
	n := len(fresh)
	var (
		fIDs, fKinds, fTypes = make([]string, n), make([]string, n), make([]string, n)
		fPayloads, fDigests  = make([][]byte, n), make([][]byte, n)
		fFinal               = make([]bool, n)
	)
	for k, i := range fresh {
		e := entries[i]
		fIDs[k], fKinds[k], fTypes[k] = e.ID, e.Kind, e.ContentType
		fPayloads[k], fDigests[k], fFinal[k] = clonePayload(e.Payload), digests[i], e.Final
		out[i] = journal.Record{Stream: stream, Seq: uint64(head) + uint64(k) + 1, ID: e.ID, Kind: e.Kind,
			ContentType: e.ContentType, Payload: fPayloads[k], Final: e.Final, AppendedAt: at}
	}
	sealing := fFinal[n-1]
	var newHead int64
	q, dest := sqlInsertRecords, []any{&newHead}
	if s.notify {
		q, dest = sqlInsertRecordsNotify, []any{&newHead, nil} // pg_notify's void is skipped
	}
	err := tx.QueryRow(ctx, q, stream, head, fIDs, fKinds, fTypes, fPayloads, fFinal, fDigests, at, n, sealing).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		// An id of the batch was committed, on another stream, between the
		// lookup and the insert (ON CONFLICT skipped it). Undo the rows
		// that went in, keeping tx usable, and report the conflict.
		if _, err := tx.Exec(ctx, sqlUndoInsert, stream, head); err != nil {
			return nil, s.dbErr(ctx, "append: undo", err)
		}
		for _, i := range fresh {
			if err := s.conflict(ctx, tx, stream, entries[i]); err != nil {
				return nil, err
			}
		}
		return nil, fmt.Errorf("append to %s: a concurrent append took one of the ids: %w", stream, journal.ErrConflict)
	}
	if err != nil {
		return nil, s.dbErr(ctx, "append to "+stream, err)
	}
	return out, nil
}

// conflict loads the record stored under e.ID and returns the
// *journal.ConflictError naming the first field that differs, or nil if
// there is no such record or it has the same content.
func (s *Store) conflict(ctx context.Context, tx pgx.Tx, stream string, e journal.Entry) error {
	rec, err := s.lookup(ctx, tx, e.ID)
	if err != nil {
		if errors.Is(err, journal.ErrNotFound) {
			return nil
		}
		return err
	}
	if err := journal.Same(rec, stream, e); err != nil {
		return err
	}
	// Same content, yet another digest: a digest written by a different
	// definition. The content decides; report nothing.
	return nil
}

func clonePayload(p []byte) []byte {
	if p == nil {
		return []byte{}
	}
	return bytes.Clone(p)
}

// Read implements journal.Journal. Only committed records are read, and
// since seqs commit in order, a reader that sees #n has seen every record
// before it.
func (s *Store) Read(ctx context.Context, stream string, fromSeq uint64, limit int) ([]journal.Record, error) {
	if err := journal.ValidateRead(stream, fromSeq, limit); err != nil {
		return nil, err
	}
	out := []journal.Record{}
	if fromSeq > maxSeq {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, sqlRead, stream, int64(fromSeq), limit)
	if err != nil {
		return nil, s.dbErr(ctx, "read "+stream, err)
	}
	defer rows.Close()
	for rows.Next() {
		r := journal.Record{Stream: stream}
		var seq int64
		if err := rows.Scan(&seq, &r.ID, &r.Kind, &r.ContentType, &r.Payload, &r.Final, &r.AppendedAt); err != nil {
			return nil, s.dbErr(ctx, "read "+stream, err)
		}
		r.Seq, r.AppendedAt = uint64(seq), r.AppendedAt.UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(ctx, "read "+stream, err)
	}
	return out, nil
}

// Head implements journal.Journal.
func (s *Store) Head(ctx context.Context, stream string) (uint64, error) {
	if err := journal.ValidateStream(stream); err != nil {
		return 0, err
	}
	var head int64
	err := s.pool.QueryRow(ctx, sqlHead, stream).Scan(&head)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, s.dbErr(ctx, "head of "+stream, err)
	}
	return uint64(head), nil
}

// Lookup implements journal.Journal.
func (s *Store) Lookup(ctx context.Context, id string) (journal.Record, error) {
	if err := journal.ValidateID("id", id); err != nil {
		return journal.Record{}, err
	}
	return s.lookup(ctx, s.pool, id)
}

// querier is what pgxpool.Pool, pgx.Conn and pgx.Tx share.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Store) lookup(ctx context.Context, q querier, id string) (journal.Record, error) {
	var r journal.Record
	var seq int64
	var at time.Time
	err := q.QueryRow(ctx, sqlLookup, id).Scan(&r.Stream, &seq, &r.ID, &r.Kind, &r.ContentType, &r.Payload, &r.Final, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return journal.Record{}, fmt.Errorf("record %q: %w", id, journal.ErrNotFound)
	}
	if err != nil {
		return journal.Record{}, s.dbErr(ctx, "lookup record", err)
	}
	r.Seq, r.AppendedAt = uint64(seq), at.UTC()
	return r, nil
}
