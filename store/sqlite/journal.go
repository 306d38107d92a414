package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Append implements journal.Journal in one write transaction (package doc,
// "Concurrency").
func (s *Store) Append(ctx context.Context, stream string, entries ...journal.Entry) ([]journal.Record, error) {
	entries, err := journal.ValidateEntries(stream, journal.WithContextTrace(ctx, entries), journal.DefaultMaxPayload)
	if err != nil {
		return nil, err
	}
	var out []journal.Record
	err = s.writeNamed(ctx, func() string { return "append to " + journal.Shown(stream) }, func(tx *sql.Tx) error {
		out, err = s.appendTx(ctx, tx, stream, entries)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, stream string, entries []journal.Entry) ([]journal.Record, error) {
	out := make([]journal.Record, len(entries))
	digests := make([][32]byte, len(entries))
	fresh := make([]int, 0, len(entries))
	lookup, err := tx.PrepareContext(ctx, stmt("lookup_digest"))
	if err != nil {
		return nil, translate("append: prepare lookup", err)
	}
	defer lookup.Close()
	// Check every id before writing anything: a batch is all-or-nothing.
	for i, e := range entries {
		digests[i] = journal.Digest(stream, e)
		var (
			storedStream string
			seq          int64
			digest       []byte
			at           sql.NullInt64
		)
		// A repeat returns the record as stored, with the trace context of
		// its first append (it is not the record's content), scanned into e.
		err := lookup.QueryRowContext(ctx, e.ID).Scan(&storedStream, &seq, &digest, &at, &e.Traceparent, &e.Tracestate)
		if errors.Is(err, sql.ErrNoRows) {
			fresh = append(fresh, i)
			continue
		}
		if err != nil {
			return nil, translate("append: look up record id", err)
		}
		if !bytes.Equal(digest, digests[i][:]) {
			stored, err := lookupRecord(ctx, tx, e.ID)
			if err != nil {
				return nil, err
			}
			if err := journal.Same(stored, stream, e); err != nil {
				return nil, err
			}
			out[i] = stored // same content, digest of another herald version
			continue
		}
		out[i] = record(storedStream, uint64(seq), e, instant(at))
	}
	if len(fresh) == 0 {
		return out, nil
	}
	var (
		head   int64
		sealed bool
	)
	err = tx.QueryRowContext(ctx, stmt("head_sealed"), stream).Scan(&head, &sealed)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, translate("append: read head", err)
	}
	if sealed {
		return nil, &journal.SealedError{Stream: stream, FinalSeq: uint64(head)}
	}
	now := s.now()
	at, err := nanos("clock", now)
	if err != nil || !at.Valid {
		return nil, fmt.Errorf("sqlite: append: the store's clock says %v, which cannot be stored", now)
	}
	if int64(len(fresh)) > math.MaxInt64-head {
		return nil, fmt.Errorf("sqlite: append: stream %q is full at #%d", stream, head)
	}
	newHead := head + int64(len(fresh))
	final := entries[fresh[len(fresh)-1]].Final
	// The stream row first (records refer to it). The append wakes the
	// stream for Due if it has registrations (package doc, "Idle costs nothing").
	_, err = tx.ExecContext(ctx, stmt("upsert_head"), stream, newHead, final, int64(dueNow))
	if err != nil {
		return nil, translate("append: update head", err)
	}
	insert, err := tx.PrepareContext(ctx, stmt("insert_record"))
	if err != nil {
		return nil, translate("append: prepare insert", err)
	}
	defer insert.Close()
	appendedAt := instant(at)
	for n, i := range fresh {
		e := entries[i]
		seq := head + int64(n) + 1
		out[i] = record(stream, uint64(seq), e, appendedAt)
		if _, err := insert.ExecContext(ctx, stream, seq, e.ID, e.Kind, e.ContentType, out[i].Payload, e.Final, at.Int64, digests[i][:], e.Traceparent, e.Tracestate); err != nil {
			return nil, translate(fmt.Sprintf("append: insert record %q", e.ID), err)
		}
	}
	return out, nil
}

// record builds the stored record of entry e (its payload copied).
func record(stream string, seq uint64, e journal.Entry, at time.Time) journal.Record {
	payload := slices.Clone(e.Payload)
	if payload == nil {
		payload = []byte{}
	}
	return journal.Record{Stream: stream, Seq: seq, ID: e.ID, Kind: e.Kind, ContentType: e.ContentType,
		Payload: payload, Final: e.Final, AppendedAt: at, Traceparent: e.Traceparent, Tracestate: e.Tracestate}
}

func scanRecord(sc scanner) (journal.Record, error) {
	var (
		r   journal.Record
		seq int64
		at  sql.NullInt64
	)
	if err := sc.Scan(&r.Stream, &seq, &r.ID, &r.Kind, &r.ContentType, &r.Payload, &r.Final, &at, &r.Traceparent, &r.Tracestate); err != nil {
		return journal.Record{}, err
	}
	if r.Payload == nil {
		r.Payload = []byte{}
	}
	r.Seq, r.AppendedAt = uint64(seq), instant(at)
	return r, nil
}

// Read implements journal.Journal.
func (s *Store) Read(ctx context.Context, stream string, fromSeq uint64, limit, maxBytes int) ([]journal.Record, error) {
	if err := journal.ValidateRead(stream, fromSeq, limit, maxBytes); err != nil {
		return nil, err
	}
	if fromSeq > math.MaxInt64 {
		return []journal.Record{}, nil
	}
	if maxBytes == 0 {
		maxBytes = math.MaxInt
	}
	rows, err := s.readPage.QueryContext(ctx, stream, int64(fromSeq), limit, int64(maxBytes))
	return scanAll(rows, err, "read "+stream, []journal.Record{}, scanRecord)
}

// Head implements journal.Journal.
func (s *Store) Head(ctx context.Context, stream string) (uint64, error) {
	if err := journal.ValidateStream(stream); err != nil {
		return 0, err
	}
	var head int64
	if err := s.r.QueryRowContext(ctx, stmt("head"), stream).Scan(&head); err != nil {
		return 0, translate("head of "+stream, err)
	}
	return uint64(head), nil
}

// Lookup implements journal.Journal.
func (s *Store) Lookup(ctx context.Context, id string) (journal.Record, error) {
	if err := journal.ValidateID("id", id); err != nil {
		return journal.Record{}, err
	}
	return lookupRecord(ctx, s.r, id)
}

func lookupRecord(ctx context.Context, q queryer, id string) (journal.Record, error) {
	r, err := scanRecord(q.QueryRowContext(ctx, stmt("lookup"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return journal.Record{}, store.RecordNotFound(id)
	}
	if err != nil {
		return journal.Record{}, translate("look up record", err)
	}
	return r, nil
}
