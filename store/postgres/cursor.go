package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// Advance implements push.Store with one UPDATE: next_seq =
// GREATEST(next_seq, nextSeq), so racing workers never move a cursor back.
func (s *Store) Advance(ctx context.Context, stream, id string, nextSeq uint64) error {
	if err := checkSeq("next seq", nextSeq); err != nil {
		return err
	}
	if !validKey(stream, id) {
		return notFound(stream, id)
	}
	tag, err := s.pool.Exec(ctx, sqlAdvance, stream, id, int64(nextSeq))
	if err != nil {
		return s.dbErr(ctx, "advance", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound(stream, id)
	}
	return nil
}

// Retry implements push.Store: the cursor reached, the failure count, the
// next attempt and the evidence, in one transaction (one round trip).
func (s *Store) Retry(ctx context.Context, stream, id string, nextSeq uint64, notBefore time.Time, ev push.Evidence) error {
	if err := checkSeq("next seq", nextSeq); err != nil {
		return err
	}
	return s.fail(ctx, "retry", stream, id, ev, sqlRetry, stream, id, int64(nextSeq), notBefore, clean(ev.Error))
}

// Park implements push.Store, as Retry does.
func (s *Store) Park(ctx context.Context, stream, id string, nextSeq uint64, ev push.Evidence) error {
	if err := checkSeq("next seq", nextSeq); err != nil {
		return err
	}
	return s.fail(ctx, "park", stream, id, ev, sqlPark, stream, id, int64(nextSeq), nullTime(ev.At), clean(ev.Error))
}

// fail runs the registration's UPDATE (which locks its row), then stores and
// trims its evidence, in one implicit transaction.
func (s *Store) fail(ctx context.Context, op, stream, id string, ev push.Evidence, update string, args ...any) error {
	if !validKey(stream, id) {
		return notFound(stream, id)
	}
	ev.Stream, ev.Registration = stream, id
	var found bool
	b := &pgx.Batch{}
	b.Queue(update, args...).Exec(func(tag pgconn.CommandTag) error {
		found = tag.RowsAffected() > 0
		return nil
	})
	queueEvidence(b, ev)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return s.dbErr(ctx, op, err)
	}
	if !found {
		return notFound(stream, id)
	}
	return nil
}

// Unpark implements push.Store. It locks the stream row first and sets its
// pending marker, as an append does, so that no sweep clears the marker of
// a stream whose registration has just become due.
func (s *Store) Unpark(ctx context.Context, stream, id string, at time.Time) error {
	if !validKey(stream, id) {
		return notFound(stream, id)
	}
	return s.inTx(ctx, "unpark", func(tx pgx.Tx) error {
		next, parked, _, err := s.lockForMove(ctx, tx, stream, id)
		if err != nil || !parked {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(sqlSetPending, stream)
		b.Queue(sqlUnpark, stream, id, at)
		queueEvidence(b, push.Evidence{Stream: stream, Registration: id, At: at, Event: push.EventUnparked, Seq: next})
		return s.dbErr(ctx, "unpark", tx.SendBatch(ctx, b).Close())
	})
}

// Skip implements push.Store.
func (s *Store) Skip(ctx context.Context, stream, id string, toSeq uint64, at time.Time, reason string) error {
	return s.move(ctx, "skip", stream, id, toSeq, at, func(next, head uint64) (string, string, error) {
		return push.EventSkip, reason, push.ValidateSkip(next, head, toSeq)
	})
}

// Rewind implements push.Store.
func (s *Store) Rewind(ctx context.Context, stream, id string, toSeq uint64, at time.Time) error {
	return s.move(ctx, "rewind", stream, id, toSeq, at, func(next, head uint64) (string, string, error) {
		return push.EventRewind, fmt.Sprintf("rewound from #%d", next), push.ValidateRewind(head, toSeq)
	})
}

// move is an operator's cursor move: lock the stream row, then the
// registration's; check toSeq against both; move, mark the stream pending
// and store the evidence. A refused move changes nothing.
func (s *Store) move(ctx context.Context, op, stream, id string, toSeq uint64, at time.Time,
	check func(next, head uint64) (event, reason string, err error)) error {
	if !validKey(stream, id) {
		return notFound(stream, id)
	}
	return s.inTx(ctx, op, func(tx pgx.Tx) error {
		next, _, head, err := s.lockForMove(ctx, tx, stream, id)
		if err != nil {
			return err
		}
		event, reason, err := check(next, head)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(sqlSetPending, stream)
		b.Queue(sqlMove, stream, id, int64(toSeq), at)
		queueEvidence(b, push.Evidence{Stream: stream, Registration: id, At: at, Event: event, Seq: next, Error: reason})
		return s.dbErr(ctx, op, tx.SendBatch(ctx, b).Close())
	})
}

// lockForMove locks the stream row, then the registration's row (the lock
// order of appends and sweeps), and returns the cursor, the parked flag and
// the stream's head.
func (s *Store) lockForMove(ctx context.Context, tx pgx.Tx, stream, id string) (next uint64, parked bool, head uint64, err error) {
	var h, n int64
	b := &pgx.Batch{}
	b.Queue(sqlLockStreamHead, stream).QueryRow(func(row pgx.Row) error { return row.Scan(&h) })
	b.Queue(sqlLockRegistration, stream, id).QueryRow(func(row pgx.Row) error { return row.Scan(&n, &parked) })
	err = tx.SendBatch(ctx, b).Close()
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, 0, notFound(stream, id)
	}
	if err != nil {
		return 0, false, 0, s.dbErr(ctx, "lock registration", err)
	}
	return uint64(n), parked, uint64(h), nil
}

// AddEvidence implements push.Store.
func (s *Store) AddEvidence(ctx context.Context, ev push.Evidence) error {
	if !validKey(ev.Stream, ev.Registration) {
		return notFound(ev.Stream, ev.Registration)
	}
	var found bool
	b := &pgx.Batch{}
	b.Queue(sqlLockRegistration, ev.Stream, ev.Registration).Query(func(rows pgx.Rows) error {
		found = rows.Next()
		rows.Close()
		return rows.Err()
	})
	queueEvidence(b, ev)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return s.dbErr(ctx, "add evidence", err)
	}
	if !found {
		return notFound(ev.Stream, ev.Registration)
	}
	return nil
}

// queueEvidence queues the insert of ev and the trim to push.MaxEvidence
// rows; the caller has queued, before them, a statement that locks the
// registration's row.
func queueEvidence(b *pgx.Batch, ev push.Evidence) {
	b.Queue(sqlInsertEvidence, ev.Stream, ev.Registration, ev.At, clean(ev.Event), int64(min(ev.Seq, maxSeq)),
		clean(ev.RecordID), clean(ev.MessageID), ev.Attempt, ev.Status, []byte(ev.Body), clean(ev.Location),
		int64(ev.Duration), clean(ev.Error), nullTime(ev.NotBefore))
	b.Queue(sqlTrimEvidence, ev.Stream, ev.Registration, push.MaxEvidence)
}

// Evidence implements push.Store.
func (s *Store) Evidence(ctx context.Context, stream, id string, limit int) ([]push.Evidence, error) {
	if limit < 0 {
		return nil, journal.Invalid("limit", "is %d: it must not be negative", limit)
	}
	if limit == 0 || limit > push.MaxEvidence {
		limit = push.MaxEvidence
	}
	if !validKey(stream, id) {
		return nil, notFound(stream, id)
	}
	var (
		exists bool
		out    = []push.Evidence{}
	)
	b := &pgx.Batch{}
	b.Queue(sqlRegistrationExists, stream, id).QueryRow(func(row pgx.Row) error { return row.Scan(&exists) })
	b.Queue(sqlEvidence, stream, id, limit).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			ev := push.Evidence{Stream: stream, Registration: id}
			var (
				seq, duration int64
				body          []byte
				notBefore     = nullTime(time.Time{})
			)
			if err := rows.Scan(&ev.At, &ev.Event, &seq, &ev.RecordID, &ev.MessageID, &ev.Attempt, &ev.Status,
				&body, &ev.Location, &duration, &ev.Error, &notBefore); err != nil {
				return err
			}
			ev.At, ev.Seq, ev.Body = ev.At.UTC(), uint64(seq), string(body)
			ev.Duration, ev.NotBefore = time.Duration(duration), timeOf(notBefore)
			out = append(out, ev)
		}
		return rows.Err()
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, s.dbErr(ctx, "evidence", err)
	}
	if !exists {
		return nil, notFound(stream, id)
	}
	return out, nil
}

// clean makes s storable as PostgreSQL text: invalid UTF-8 and NUL bytes
// become U+FFFD. Evidence words (errors, message ids, locations) come from
// receivers and libraries and may hold either; the response body is kept
// byte for byte in a bytea column instead.
func clean(s string) string {
	if validText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
