package postgres

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Append implements journal.Journal: it commits the records, runs a sequencer
// step and returns them with their seqs (0 for a record pruned already). A
// record the step refuses (package doc, "Sealing") is a *journal.SealedError.
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
	if _, err := s.sequence(ctx, nil, seqWait, nil); err != nil {
		return nil, fmt.Errorf("append to %s: the records are committed; numbering them failed (the sequencer will): %w", journal.Shown(stream), err)
	}
	rows, err := s.pool.Query(ctx, stmt("lookup_ids"), pgx.NamedArgs{"ids": entryIDs(entries)})
	numbered, err := collectStored(rows, err)
	if err != nil {
		return nil, s.dbErr(ctx, "append to "+journal.Shown(stream)+": read the seqs", err)
	}
	for i, r := range out {
		n, found := numbered[r.ID]
		switch {
		case !found: // numbered, delivered and pruned already: its seq is gone with it
		case n.refused:
			return nil, s.sealed(ctx, s.pool, stream, nil)
		case n.Seq == 0:
			return nil, fmt.Errorf("append to %s: record %q is committed but has no seq after a sequencer step: %w", stream, r.ID, journal.ErrNotFound)
		default:
			out[i].Seq = n.Seq
		}
	}
	return out, nil
}

// AppendTx appends entries to stream in the caller's transaction tx, so that
// the records commit or roll back with the caller's own writes. Validation,
// idempotency and errors are Append's, decided before tx commits. The seq is
// assigned after the commit (package doc, "Appending"): new records come
// back with Seq 0, and Lookup finds them once a sequencer step ran. A
// refusal leaves tx usable; a database failure may have aborted it. Under
// REPEATABLE READ or SERIALIZABLE, an id another transaction committed after
// tx's snapshot fails with ErrRetry.
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

// stored is a record the id lookup found, but its payload.
type stored struct {
	journal.Record
	refused bool
}

// appendTx appends validated entries in tx: one entry by a plain insert
// (the usual append), a batch, or an entry the insert did not take, by
// herald_append_rows, which checks them again (a producer may call it by
// hand), inserts them and, when an id is stored or the stream sealed,
// decides as journal.Same does (package doc, "Appending from SQL").
func (s *Store) appendTx(ctx context.Context, tx pgx.Tx, stream string, entries []journal.Entry) ([]journal.Record, error) {
	n := len(entries)
	if n == 1 {
		e := entries[0]
		payload, digest := clonePayload(e.Payload), journal.Digest(stream, e)
		at := s.now().UTC().Truncate(time.Microsecond) // PostgreSQL's precision
		tag, err := tx.Exec(ctx, stmt("insert_record"), pgx.NamedArgs{"stream": stream, "id": e.ID, "kind": e.Kind,
			"content_type": e.ContentType, "payload": payload, "final": e.Final, "digest": digest[:], "at": at,
			"traceparent": e.Traceparent, "tracestate": e.Tracestate})
		if err != nil {
			return nil, s.dbErr(ctx, "append to "+stream, err)
		}
		if tag.RowsAffected() == 1 {
			return []journal.Record{record(stream, e, payload, at)}, nil
		}
	}
	ids, kinds, types, parents, states := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	payloads, finals := make([][]byte, n), make([]bool, n)
	for i, e := range entries {
		ids[i], kinds[i], types[i], parents[i], states[i] = e.ID, e.Kind, e.ContentType, e.Traceparent, e.Tracestate
		payloads[i], finals[i] = clonePayload(e.Payload), e.Final
	}
	at := s.now().UTC().Truncate(time.Microsecond) // PostgreSQL's precision
	var (
		verdict              string
		seqs                 []int64
		ats                  []time.Time
		tps, tss             []string
		cID, cStream, cField *string
		cSeq, finalSeq       *int64
	)
	err := tx.QueryRow(ctx, stmt("append_rows"), pgx.NamedArgs{"stream": stream, "ids": ids, "kinds": kinds, "content_types": types,
		"payloads": payloads, "finals": finals, "traceparents": parents, "tracestates": states, "at": at}).
		Scan(&verdict, &seqs, &ats, &tps, &tss, &cID, &cStream, &cSeq, &cField, &finalSeq)
	if err != nil {
		return nil, s.dbErr(ctx, "append to "+stream, err)
	}
	switch verdict {
	case "conflict":
		return nil, &journal.ConflictError{ID: *cID, Stream: *cStream, Seq: uint64(*cSeq), Field: *cField}
	case "sealed":
		return nil, &journal.SealedError{Stream: stream, FinalSeq: uint64(*finalSeq)}
	case "raced":
		return nil, fmt.Errorf("append to %s: a concurrent append took one of the ids: %w", stream, journal.ErrConflict)
	}
	out := make([]journal.Record, n)
	for i, e := range entries {
		out[i] = record(stream, e, payloads[i], at)
		if seqs != nil { // some were stored: their records as stored
			out[i].Seq, out[i].AppendedAt, out[i].Traceparent, out[i].Tracestate = uint64(seqs[i]), ats[i].UTC(), tps[i], tss[i]
		}
	}
	return out, nil
}

func record(stream string, e journal.Entry, payload []byte, at time.Time) journal.Record {
	return journal.Record{Stream: stream, ID: e.ID, Kind: e.Kind, ContentType: e.ContentType, Payload: payload,
		Final: e.Final, AppendedAt: at, Traceparent: e.Traceparent, Tracestate: e.Tracestate}
}

func entryIDs(entries []journal.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return out
}

// collectStored reads statement lookup_ids's rows (or fails with err) by id.
func collectStored(rows pgx.Rows, err error) (map[string]stored, error) {
	if err != nil {
		return nil, err
	}
	found := map[string]stored{}
	var r stored
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.Stream, &r.Seq, &r.Kind, &r.ContentType, &r.Final, &r.AppendedAt,
		&r.Traceparent, &r.Tracestate, &r.refused}, func() error {
		r.AppendedAt = r.AppendedAt.UTC()
		found[r.ID] = r
		return nil
	})
	return found, err
}

// sealed returns the *journal.SealedError of stream: FinalSeq is 0 while
// the final record is committed but not yet numbered.
func (s *Store) sealed(ctx context.Context, q querier, stream string, finalSeq *int64) error {
	if finalSeq == nil {
		var f int64
		if err := q.QueryRow(ctx, stmt("final_seq"), pgx.NamedArgs{"stream": stream}).Scan(&f); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return s.dbErr(ctx, "append to "+stream+": read the final seq", err)
		}
		finalSeq = &f
	}
	return &journal.SealedError{Stream: stream, FinalSeq: uint64(*finalSeq)}
}

func clonePayload(p []byte) []byte {
	if p == nil {
		return []byte{}
	}
	return bytes.Clone(p)
}

// Read implements journal.Journal. It reads numbered records only.
func (s *Store) Read(ctx context.Context, stream string, fromSeq uint64, limit, maxBytes int) ([]journal.Record, error) {
	if err := journal.ValidateRead(stream, fromSeq, limit, maxBytes); err != nil {
		return nil, err
	}
	if fromSeq > maxSeq {
		return []journal.Record{}, nil
	}
	return query(ctx, s, "read "+stream, []journal.Record{}, func(row pgx.CollectableRow) (journal.Record, error) {
		r, err := scanRecord(row)
		r.Stream = stream
		return r, err
	}, stmt("read"), pgx.NamedArgs{"stream": stream, "from_seq": int64(fromSeq), "limit": limit, "max_bytes": int64(cmp.Or(maxBytes, math.MaxInt))})
}

// Head implements journal.Journal.
func (s *Store) Head(ctx context.Context, stream string) (uint64, error) {
	if err := journal.ValidateStream(stream); err != nil {
		return 0, err
	}
	var head uint64
	err := s.pool.QueryRow(ctx, stmt("head"), pgx.NamedArgs{"stream": stream}).Scan(&head)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, s.dbErr(ctx, "head of "+stream, err)
	}
	return head, nil
}

// Lookup implements journal.Journal. It finds numbered records only: one
// waiting for the sequencer is a *journal.UnnumberedError, one it refused
// (package doc, "Sealing") journal.ErrNotFound saying why.
func (s *Store) Lookup(ctx context.Context, id string) (journal.Record, error) {
	if err := journal.ValidateID("id", id); err != nil {
		return journal.Record{}, err
	}
	var refused *string
	r, err := s.lookup(ctx, s.pool, stmt("lookup_verdict"), id, &refused)
	switch {
	case err != nil || r.Seq != 0:
		return r, err
	case refused != nil:
		return journal.Record{}, fmt.Errorf("record %q was refused, never to be read or delivered (%s): %w", id, *refused, journal.ErrNotFound)
	}
	return journal.Record{}, &journal.UnnumberedError{Record: r}
}

func (s *Store) lookup(ctx context.Context, q querier, query, id string, extra ...any) (journal.Record, error) {
	var stream string
	r, err := scanRecord(q.QueryRow(ctx, query, pgx.NamedArgs{"id": id}), append([]any{&stream}, extra...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return journal.Record{}, store.RecordNotFound(id)
	}
	if err != nil {
		return journal.Record{}, s.dbErr(ctx, "lookup record", err)
	}
	r.Stream = stream
	return r, nil
}

// scanRecord reads a record's columns (sql/journal.sql, lookup_verdict), then extra.
func scanRecord(row pgx.Row, extra ...any) (journal.Record, error) {
	var r journal.Record
	err := row.Scan(append([]any{&r.Seq, &r.ID, &r.Kind, &r.ContentType, &r.Payload, &r.Final, &r.AppendedAt, &r.Traceparent, &r.Tracestate}, extra...)...)
	r.AppendedAt = r.AppendedAt.UTC()
	return r, err
}

// RefusedRecord is a record the sequencer refused (package doc, "Sealing").
type RefusedRecord struct {
	Stream, ID, Kind string
	AppendedAt       time.Time // UTC
	Reason           string    // why, e.g. "committed after the stream's final record #7 was sequenced"
}

// Refused lists up to limit refused records of stream ("": every stream) in
// stream and insertion order. Errors: journal.ErrInvalid.
func (s *Store) Refused(ctx context.Context, stream string, limit int) ([]RefusedRecord, error) {
	if err := journal.ValidateStream(stream); err != nil && stream != "" {
		return nil, err
	}
	if limit < 1 {
		return nil, journal.Invalid("limit", "is %d: it must be at least 1", limit)
	}
	return query(ctx, s, "list refused records", []RefusedRecord{}, func(row pgx.CollectableRow) (RefusedRecord, error) {
		var r RefusedRecord
		err := row.Scan(&r.Stream, &r.ID, &r.Kind, &r.AppendedAt, &r.Reason)
		r.AppendedAt = r.AppendedAt.UTC()
		return r, err
	}, stmt("refused"), pgx.NamedArgs{"stream": stream, "limit": limit})
}
