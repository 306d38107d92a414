package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/journal"
)

// Append implements journal.Journal in a transaction of its own: it
// commits the records, runs a sequencer step (waiting for one running
// elsewhere to end first) and returns them with their seqs (Seq 0 for a
// record pruned before Append could read its seq: delivered to every
// registration already, under a retention of 0). A record that
// the step refuses (its stream's final record was numbered first: the
// package doc, "Sealing") is a *journal.SealedError; it stays stored,
// refused (Refused lists it), and is never delivered.
func (s *Store) Append(ctx context.Context, stream string, entries ...journal.Entry) ([]journal.Record, error) {
	entries, err := journal.ValidateEntries(stream, journal.WithContextTrace(ctx, entries), journal.DefaultMaxPayload)
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
	if !slices.ContainsFunc(out, func(r journal.Record) bool { return r.Seq == 0 }) {
		return out, nil
	}
	if _, err := s.sequence(ctx, seqWait); err != nil {
		return nil, fmt.Errorf("append to %s: the records are committed; numbering them failed (the sequencer will): %w", journal.Shown(stream), err)
	}
	return s.withSeqs(ctx, stream, out)
}

// withSeqs fills in the seqs the sequencer gave out's records.
func (s *Store) withSeqs(ctx context.Context, stream string, out []journal.Record) ([]journal.Record, error) {
	ids := make([]string, len(out))
	for i, r := range out {
		ids[i] = r.ID
	}
	seqs := map[string]int64{}
	refused := false
	rows, err := s.pool.Query(ctx, sqlSeqsOf, ids)
	if err == nil {
		var (
			id  string
			seq int64
			ref bool
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &seq, &ref}, func() error {
			seqs[id], refused = seq, refused || ref
			return nil
		})
	}
	if err != nil {
		return nil, s.dbErr(ctx, "append to "+journal.Shown(stream)+": read the seqs", err)
	}
	if refused {
		var final int64
		if err := s.pool.QueryRow(ctx, sqlFinalSeq, stream).Scan(&final); err != nil {
			return nil, s.dbErr(ctx, "append to "+journal.Shown(stream)+": read the final seq", err)
		}
		return nil, &journal.SealedError{Stream: stream, FinalSeq: uint64(final)}
	}
	for i := range out {
		seq, found := seqs[out[i].ID]
		if !found {
			// Numbered, delivered to every registration and pruned
			// already (a retention of 0 can be that quick): the append
			// stands, and its seq is gone with it.
			continue
		}
		out[i].Seq = uint64(seq)
		if out[i].Seq == 0 {
			return nil, fmt.Errorf("append to %s: record %q is committed but has no seq after a sequencer step: %w", stream, out[i].ID, journal.ErrNotFound)
		}
	}
	return out, nil
}

// AppendTx appends entries to stream inside the caller's transaction tx, so
// that the records commit or roll back with the caller's own writes (the
// transactional outbox). Validation, idempotency and errors are Append's,
// decided here, before tx commits: an id stored with the same content
// returns the stored record; with other content, a *journal.ConflictError;
// a stream that is sealed (or has a committed final record not yet
// numbered), a *journal.SealedError.
//
// AppendTx writes one row per new record and takes no lock but the unique
// index entry of each new id, so it does not slow the caller's commit or
// serialise writers of a stream. The seq is assigned after tx commits, by
// the sequencer (package doc, "Appending"): the records it returns for new
// entries have Seq 0, meaning not yet assigned; a stored record returned
// for a repeated id carries its seq if it has one. The seq is known once a
// sequencer step after the commit ran: within milliseconds under a daemon
// (RunSequencer), at the next Due or Append of any process, or at once by
// calling Sequence; Lookup then returns it. Readers never see a record
// before it has its seq.
//
// An error from AppendTx (bad input, conflict, sealed stream) leaves tx
// usable: nothing was written in it by the failed call. A database failure
// may have aborted tx; then roll it back. tx may run at any isolation
// level; under REPEATABLE READ or SERIALIZABLE, an id that another
// transaction committed after tx's snapshot fails with ErrRetry.
func (s *Store) AppendTx(ctx context.Context, tx pgx.Tx, stream string, entries ...journal.Entry) ([]journal.Record, error) {
	if tx == nil {
		return nil, journal.Invalid("tx", "is nil")
	}
	entries, err := journal.ValidateEntries(stream, journal.WithContextTrace(ctx, entries), journal.DefaultMaxPayload)
	if err != nil {
		return nil, err
	}
	out, err := s.appendTx(ctx, tx, stream, entries)
	if err == nil {
		s.poke() // tx will likely commit soon: look sooner
	}
	return out, err
}

// stored is what the id lookup returns of an existing record: everything
// but the payload, which equals the entry's when the digests match.
type stored struct {
	journal.Record
	digest  []byte
	refused bool
}

// appendTx appends validated entries in tx. Usually one round trip: the
// insert, which checks the seal and that no id is stored. Else the lookup
// decides (idempotent repeat, conflict, sealed stream) and the new entries
// are inserted. The records come back with Seq 0 for the new ones.
func (s *Store) appendTx(ctx context.Context, tx pgx.Tx, stream string, entries []journal.Entry) ([]journal.Record, error) {
	// The digests in one array, and for one entry (the usual append) no
	// index list to build: allocations are a share of AppendTx's cost
	// (issue 15, in the history of BENCHMARKS.md).
	digests, flat := make([][]byte, len(entries)), make([]byte, 0, sha256.Size*len(entries))
	for i, e := range entries {
		d := journal.Digest(stream, e)
		flat = append(flat, d[:]...)
		digests[i] = flat[len(flat)-sha256.Size : len(flat) : len(flat)] // capped: an append cannot reach the next
	}
	all := onlyFirst
	if len(entries) > 1 {
		all = make([]int, len(entries))
		for i := range all {
			all[i] = i
		}
	}
	out := make([]journal.Record, len(entries))
	blocked, err := s.insert(ctx, tx, stream, entries, digests, all, out)
	if err != nil || !blocked {
		if err != nil {
			return nil, err
		}
		return out, nil
	}

	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	var (
		finalSeq     *int64
		pendingFinal bool
		existing     = map[string]stored{}
	)
	b := &pgx.Batch{}
	b.Queue(sqlSealState, stream).QueryRow(func(row pgx.Row) error { return row.Scan(&finalSeq, &pendingFinal) })
	b.Queue(sqlLookupIDs, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var r stored
			var seq int64
			if err := rows.Scan(&r.ID, &r.Stream, &seq, &r.Kind, &r.ContentType, &r.Final, &r.AppendedAt,
				&r.Traceparent, &r.Tracestate, &r.digest, &r.refused); err != nil {
				return err
			}
			r.Seq, r.AppendedAt = uint64(seq), r.AppendedAt.UTC()
			existing[r.ID] = r
		}
		return rows.Err()
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, s.dbErr(ctx, "append to "+stream+": look up", err)
	}

	// Check everything before writing anything: a batch is all-or-nothing.
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
		if old.refused {
			return nil, s.sealed(ctx, tx, stream, finalSeq)
		}
		rec := old.Record
		rec.Payload = clonePayload(e.Payload)
		out[i] = rec
	}
	if len(fresh) == 0 {
		return out, nil
	}
	if finalSeq != nil || pendingFinal {
		return nil, s.sealed(ctx, tx, stream, finalSeq)
	}
	if blocked, err = s.insert(ctx, tx, stream, entries, digests, fresh, out); err != nil {
		return nil, err
	}
	if blocked {
		// Sealed, or one of the fresh ids stored, since the lookup.
		if err := tx.QueryRow(ctx, sqlSealState, stream).Scan(&finalSeq, &pendingFinal); err != nil {
			return nil, s.dbErr(ctx, "append to "+stream+": look up", err)
		}
		if finalSeq != nil || pendingFinal {
			return nil, s.sealed(ctx, tx, stream, finalSeq)
		}
		return nil, fmt.Errorf("append to %s: a concurrent append took one of the ids: %w", stream, journal.ErrConflict)
	}
	return out, nil
}

// insert inserts entries[fresh] (sqlInsertRecord for one, sqlInsertRecords
// for more) and fills their records in out. blocked: nothing was inserted,
// because the stream is sealed or an id is stored. Of more entries, an id
// committed by another transaction meanwhile undoes the insert, keeping tx
// usable, and is reported as a conflict; of one, it is blocked, and the
// lookup decides (the idempotent repeat, or a conflict).
func (s *Store) insert(ctx context.Context, tx pgx.Tx, stream string, entries []journal.Entry, digests [][]byte, fresh []int, out []journal.Record) (blocked bool, err error) {
	at := s.stamp()
	n := len(fresh)
	if n == 1 {
		// One entry: no arrays, which only sqlInsertRecords reads.
		i := fresh[0]
		e := entries[i]
		payload := clonePayload(e.Payload)
		ct, err := tx.Exec(ctx, sqlInsertRecord, stream, e.ID, e.Kind, e.ContentType, payload, e.Final, digests[i], at, e.Traceparent, e.Tracestate)
		if err != nil {
			return false, s.dbErr(ctx, "append to "+stream, err)
		}
		if ct.RowsAffected() == 0 {
			return true, nil
		}
		out[i] = journal.Record{Stream: stream, ID: e.ID, Kind: e.Kind,
			ContentType: e.ContentType, Payload: payload, Final: e.Final, AppendedAt: at,
			Traceparent: e.Traceparent, Tracestate: e.Tracestate}
		return false, nil
	}
	var (
		fIDs, fKinds, fTypes = make([]string, n), make([]string, n), make([]string, n)
		fPayloads, fDigests  = make([][]byte, n), make([][]byte, n)
		fFinal               = make([]bool, n)
		fParents, fStates    = make([]string, n), make([]string, n)
	)
	for k, i := range fresh {
		e := entries[i]
		fIDs[k], fKinds[k], fTypes[k] = e.ID, e.Kind, e.ContentType
		fPayloads[k], fDigests[k], fFinal[k] = clonePayload(e.Payload), digests[i], e.Final
		fParents[k], fStates[k] = e.Traceparent, e.Tracestate
	}
	var inserted []string
	err = tx.QueryRow(ctx, sqlInsertRecords, stream, fIDs, fKinds, fTypes, fPayloads, fFinal, fDigests, at, fParents, fStates).Scan(&inserted, &blocked)
	if err != nil {
		return false, s.dbErr(ctx, "append to "+stream, err)
	}
	if blocked {
		return true, nil
	}
	if len(inserted) < n {
		// An id of the batch was committed, by another transaction, after
		// this statement's snapshot (ON CONFLICT skipped it). Undo the rows
		// that went in and report the conflict.
		if _, err := tx.Exec(ctx, sqlUndoInsert, inserted); err != nil {
			return false, s.dbErr(ctx, "append: undo", err)
		}
		for _, i := range fresh {
			if err := s.conflict(ctx, tx, stream, entries[i]); err != nil {
				return false, err
			}
		}
		return false, fmt.Errorf("append to %s: a concurrent append took one of the ids: %w", stream, journal.ErrConflict)
	}
	for k, i := range fresh {
		e := entries[i]
		out[i] = journal.Record{Stream: stream, ID: e.ID, Kind: e.Kind,
			ContentType: e.ContentType, Payload: fPayloads[k], Final: e.Final, AppendedAt: at,
			Traceparent: e.Traceparent, Tracestate: e.Tracestate}
	}
	return false, nil
}

// sealed returns the *journal.SealedError of stream: FinalSeq is 0 while
// the final record is committed but not yet numbered.
func (s *Store) sealed(ctx context.Context, q querier, stream string, finalSeq *int64) error {
	if finalSeq == nil {
		var f int64
		if err := q.QueryRow(ctx, sqlFinalSeq, stream).Scan(&f); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return s.dbErr(ctx, "append to "+stream+": read the final seq", err)
		}
		finalSeq = &f
	}
	return &journal.SealedError{Stream: stream, FinalSeq: uint64(*finalSeq)}
}

// conflict loads the record stored under e.ID and returns the
// *journal.ConflictError naming the first field that differs, or nil if
// there is no such record or it has the same content.
func (s *Store) conflict(ctx context.Context, tx pgx.Tx, stream string, e journal.Entry) error {
	rec, err := s.lookup(ctx, tx, sqlLookupAny, e.ID)
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

// onlyFirst is the index list of a one-entry append (read, never written).
var onlyFirst = []int{0}

func clonePayload(p []byte) []byte {
	if p == nil {
		return []byte{}
	}
	return bytes.Clone(p)
}

// Read implements journal.Journal. Only sequenced records are read, and
// since the sequencer numbers committed records only, in order, a reader
// that sees #n has seen every record before it.
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
		if err := rows.Scan(&seq, &r.ID, &r.Kind, &r.ContentType, &r.Payload, &r.Final, &r.AppendedAt, &r.Traceparent, &r.Tracestate); err != nil {
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

// Lookup implements journal.Journal. A record committed by AppendTx is
// found once it has its seq (ErrNotFound before).
func (s *Store) Lookup(ctx context.Context, id string) (journal.Record, error) {
	if err := journal.ValidateID("id", id); err != nil {
		return journal.Record{}, err
	}
	return s.lookup(ctx, s.pool, sqlLookup, id)
}

// querier is what pgxpool.Pool, pgx.Conn and pgx.Tx share.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Store) lookup(ctx context.Context, q querier, query, id string) (journal.Record, error) {
	var r journal.Record
	var seq int64
	var at time.Time
	err := q.QueryRow(ctx, query, id).Scan(&r.Stream, &seq, &r.ID, &r.Kind, &r.ContentType, &r.Payload, &r.Final, &at, &r.Traceparent, &r.Tracestate)
	if errors.Is(err, pgx.ErrNoRows) {
		return journal.Record{}, fmt.Errorf("record %q: %w", id, journal.ErrNotFound)
	}
	if err != nil {
		return journal.Record{}, s.dbErr(ctx, "lookup record", err)
	}
	r.Seq, r.AppendedAt = uint64(seq), at.UTC()
	return r, nil
}

// RefusedRecord is a record the sequencer refused: its transaction
// committed after its stream's final record had been sequenced (or it is a
// second final record). It has no seq, is never read nor delivered, and is
// kept for an operator to see.
type RefusedRecord struct {
	Stream, ID, Kind string
	AppendedAt       time.Time // UTC
	Reason           string    // why, e.g. "committed after the stream's final record #7 was sequenced"
}

// Refused lists up to limit refused records of stream (of every stream if
// stream is ""), by stream and insertion order. Errors: journal.ErrInvalid
// (bad stream, limit < 1).
func (s *Store) Refused(ctx context.Context, stream string, limit int) ([]RefusedRecord, error) {
	if stream != "" {
		if err := journal.ValidateStream(stream); err != nil {
			return nil, err
		}
	}
	if limit < 1 {
		return nil, journal.Invalid("limit", "is %d: it must be at least 1", limit)
	}
	rows, err := s.pool.Query(ctx, sqlRefused, stream, limit)
	out := []RefusedRecord{}
	if err == nil {
		var r RefusedRecord
		_, err = pgx.ForEachRow(rows, []any{&r.Stream, &r.ID, &r.Kind, &r.AppendedAt, &r.Reason}, func() error {
			r.AppendedAt = r.AppendedAt.UTC()
			out = append(out, r)
			return nil
		})
	}
	if err != nil {
		return nil, s.dbErr(ctx, "list refused records", err)
	}
	return out, nil
}
