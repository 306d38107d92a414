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
	"github.com/heraldpush/herald/store"
)

// Advance implements push.Store with one UPDATE, fenced by the claim:
// next_seq = GREATEST(next_seq, nextSeq), so racing workers never move a
// cursor back, and only while c.Owner holds the lease.
func (s *Store) Advance(ctx context.Context, c push.Claim, nextSeq uint64) error {
	if err := checkCursor(nextSeq); err != nil {
		return err
	}
	return s.fenced(ctx, "advance", c, nextSeq, false, nil, sqlAdvance, c.Stream, c.ID, c.Owner, int64(nextSeq))
}

// Checkpoint implements push.Store: Advance's UPDATE without the lease's
// release.
func (s *Store) Checkpoint(ctx context.Context, c push.Claim, nextSeq uint64) error {
	if err := checkCursor(nextSeq); err != nil {
		return err
	}
	return s.fenced(ctx, "checkpoint", c, nextSeq, false, nil, sqlCheckpoint, c.Stream, c.ID, c.Owner, int64(nextSeq))
}

// Retry implements push.Store: the cursor reached, the failure count, the
// next attempt and the evidence, in one statement fenced by the claim.
func (s *Store) Retry(ctx context.Context, c push.Claim, nextSeq uint64, notBefore time.Time, ev push.Evidence) error {
	if err := checkCursor(nextSeq); err != nil {
		return err
	}
	if err := errors.Join(push.ValidateInstant("not before", notBefore), push.ValidateInstant("evidence at", ev.At)); err != nil {
		return err
	}
	ev.Stream, ev.Registration = c.Stream, c.ID
	args := append(evidenceArgs(ev), c.Owner, int64(nextSeq), notBefore)
	return s.fenced(ctx, "retry", c, nextSeq, true, nil, sqlRetry, args...)
}

// Park implements push.Store, as Retry does.
func (s *Store) Park(ctx context.Context, c push.Claim, nextSeq uint64, ev push.Evidence) error {
	if err := checkCursor(nextSeq); err != nil {
		return err
	}
	if err := push.ValidateInstant("evidence at", ev.At); err != nil {
		return err
	}
	ev.Stream, ev.Registration = c.Stream, c.ID
	args := append(evidenceArgs(ev), c.Owner, int64(nextSeq))
	tell := func(r fencedReg) (journal.Entry, bool) {
		return push.RegistrationEvent(push.KindParked, r.Registration, max(r.NextSeq, nextSeq), "", ev.Clean().Error, ev.At)
	}
	return s.fenced(ctx, "park", c, nextSeq, true, tell, sqlPark, args...)
}

// Complete implements push.Store: the registration and its evidence (ON
// DELETE CASCADE) are deleted, fenced by the claim; the journal keeps its
// records.
func (s *Store) Complete(ctx context.Context, c push.Claim) error {
	tell := func(r fencedReg) (journal.Entry, bool) {
		// The instant is the claim's: Due stamped it as NextAttemptAt.
		return push.RegistrationEvent(push.KindCompleted, r.Registration, r.head+1, "", "", r.NextAttemptAt)
	}
	return s.fenced(ctx, "complete", c, 0, false, tell, sqlComplete, c.Stream, c.ID, c.Owner)
}

// fencedReg is what a fenced write with an operational event reads of the
// registration before the write: enough for push.RegistrationEvent.
type fencedReg struct {
	push.Registration
	head uint64
}

// fenced runs write, a statement made under claim c, after sqlFence, in one
// round trip and one implicit transaction. sqlFence locks the registration's
// row and reads its lease owner and its stream's head; write repeats the
// fence in its WHERE clause (lease_owner = c.Owner, and for a cursor, at
// most head+1) and affects no row unless both hold. The row lock keeps the
// lease from changing between the two statements, so a write that did not
// apply is told apart exactly: no row (ErrNotFound), another owner
// (ErrLeaseLost), else the cursor is past head+1 (ErrInvalid). The head
// only grows, so write, whose snapshot is the later, never refuses a
// cursor that sqlFence's head allows. nextSeq 0 means the write moves no
// cursor (Complete). With evidence, write also inserts an evidence row (if
// it applies), and a third statement trims the registration's evidence.
// With tell (Park, Complete), the batch runs in an explicit transaction
// that also reads the registration and, if write applied, appends the
// operational event tell returns (a plain INSERT, the lock-free append
// path), so the event commits exactly when the change does.
func (s *Store) fenced(ctx context.Context, op string, c push.Claim, nextSeq uint64, evidence bool,
	tell func(fencedReg) (journal.Entry, bool), write string, args ...any) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if !validKey(c.Stream, c.ID) {
		return notFound(c.Stream, c.ID)
	}
	var (
		found, applied bool
		owner          string
		head           int64
		reg            = fencedReg{Registration: push.Registration{Stream: c.Stream, ID: c.ID}}
	)
	b := &pgx.Batch{}
	b.Queue(sqlFence, c.Stream, c.ID).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		if rows.Next() {
			found = true
			var next int64
			var hostFailures int
			if err := rows.Scan(&owner, &head, &next, &hostFailures); err != nil {
				return err
			}
			reg.NextSeq, reg.head = uint64(next), uint64(head)
		}
		return rows.Err()
	})
	if tell != nil {
		b.Queue(sqlRegistrationForEvent, c.Stream, c.ID).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			if rows.Next() {
				if err := rows.Scan(&reg.Namespace, &reg.URL, &reg.NextAttemptAt); err != nil {
					return err
				}
				reg.NextAttemptAt = reg.NextAttemptAt.UTC()
			}
			return rows.Err()
		})
	}
	b.Queue(write, args...).Exec(func(tag pgconn.CommandTag) error {
		applied = tag.RowsAffected() > 0
		return nil
	})
	if evidence {
		queueTrim(b, c.Stream, c.ID)
	}
	if tell == nil {
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, op, err)
		}
	} else {
		told := false
		err := s.inTx(ctx, op, func(tx pgx.Tx) error {
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return s.dbErr(ctx, op, err)
			}
			if !applied {
				return nil // nothing changed: no event; the checks below say why
			}
			e, ok := tell(reg)
			if !ok {
				return nil
			}
			told = true
			return s.appendEvent(ctx, tx, e)
		})
		if err != nil {
			return err
		}
		if told {
			s.poke()
		}
	}
	switch {
	case applied:
		return nil
	case !found:
		return notFound(c.Stream, c.ID)
	case owner != c.Owner:
		return fmt.Errorf("%s %s under the lease of %s: %w", op, push.Name(c.Stream, c.ID), c.Owner, push.ErrLeaseLost)
	}
	if nextSeq > 0 {
		if err := store.ValidateCursor(nextSeq, uint64(head)); err != nil {
			return err
		}
	}
	return fmt.Errorf("postgres: %s %s: the write did not apply under a held lease and a valid cursor", op, push.Name(c.Stream, c.ID))
}

// checkCursor refuses, before any round trip, a cursor no stream can have:
// 0, or beyond what PostgreSQL's bigint holds. The upper bound that depends
// on the stream's head is checked by the fenced statement.
func checkCursor(nextSeq uint64) error {
	if nextSeq < 1 {
		return journal.Invalid("next seq", "is 0: a cursor is 1-based")
	}
	return checkSeq("next seq", nextSeq)
}

// Unpark implements push.Store. It locks the stream row first and sets its
// pending marker, as an append does, so that no sweep clears the marker of
// a stream whose registration has just become due. It clears the lease: a
// turn still in flight can no longer write.
func (s *Store) Unpark(ctx context.Context, stream, id string, at time.Time) error {
	if err := push.ValidateInstant("at", at); err != nil {
		return err
	}
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
		if err := s.dbErr(ctx, "unpark", tx.SendBatch(ctx, b).Close()); err != nil {
			return err
		}
		return s.registrationEvent(ctx, tx, push.KindUnparked, stream, id, next, "", "", at)
	})
}

// registrationEvent appends, in tx (the transaction of the change), herald's
// operational event of kind about registration stream/id
// (push.RegistrationEvent).
func (s *Store) registrationEvent(ctx context.Context, tx pgx.Tx, kind, stream, id string, cursor uint64, by, reason string, at time.Time) error {
	r := push.Registration{Stream: stream, ID: id}
	var ignored time.Time
	if err := tx.QueryRow(ctx, sqlRegistrationForEvent, stream, id).Scan(&r.Namespace, &r.URL, &ignored); err != nil {
		return s.dbErr(ctx, "read the registration for its event", err)
	}
	e, ok := push.RegistrationEvent(kind, r, cursor, by, reason, at)
	if !ok {
		return nil
	}
	if err := s.appendEvent(ctx, tx, e); err != nil {
		return err
	}
	s.poke() // the event commits with tx: number it soon
	return nil
}

// appendEvent appends one operational event to push.EventsStream in tx: the
// plain INSERT of AppendTx, which takes no lock the change must wait for.
func (s *Store) appendEvent(ctx context.Context, tx pgx.Tx, e journal.Entry) error {
	if _, err := s.appendTx(ctx, tx, push.EventsStream, []journal.Entry{e}); err != nil {
		return fmt.Errorf("postgres: append operational event %s: %w", e.Kind, err)
	}
	return nil
}

// Skip implements push.Store.
func (s *Store) Skip(ctx context.Context, stream, id string, toSeq uint64, at time.Time, reason string) error {
	return s.move(ctx, "skip", stream, id, toSeq, at, func(next, head uint64) (string, string, error) {
		return push.EventSkip, reason, store.ValidateSkip(next, head, toSeq)
	}, push.KindSkipped)
}

// Rewind implements push.Store.
func (s *Store) Rewind(ctx context.Context, stream, id string, toSeq uint64, at time.Time) error {
	return s.move(ctx, "rewind", stream, id, toSeq, at, func(next, head uint64) (string, string, error) {
		return push.EventRewind, fmt.Sprintf("rewound from #%d to #%d", next, toSeq), store.ValidateRewind(next, head, toSeq)
	}, "")
}

// move is an operator's cursor move: lock the stream row, then the
// registration's; check toSeq against both; move, clear the lease (a turn in
// flight can no longer undo the move), mark the stream pending and store the
// evidence. A refused move changes nothing.
func (s *Store) move(ctx context.Context, op, stream, id string, toSeq uint64, at time.Time,
	check func(next, head uint64) (event, reason string, err error), eventKind string) error {
	if err := push.ValidateInstant("at", at); err != nil {
		return err
	}
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
		var oldest int64
		if err := tx.QueryRow(ctx, sqlOldest, stream).Scan(&oldest); err != nil {
			return s.dbErr(ctx, op+": read the low-water mark", err)
		}
		if err := store.CheckRetained(stream, toSeq, uint64(oldest)); err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(sqlSetPending, stream)
		b.Queue(sqlMove, stream, id, int64(toSeq), at)
		queueEvidence(b, push.Evidence{Stream: stream, Registration: id, At: at, Event: event, Seq: next, Error: reason})
		if err := s.dbErr(ctx, op, tx.SendBatch(ctx, b).Close()); err != nil || eventKind == "" {
			return err
		}
		return s.registrationEvent(ctx, tx, eventKind, stream, id, toSeq, push.ByOperator, reason, at)
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
	if ev.Event != push.EventSkipped {
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "add evidence", err)
		}
		if !found {
			return notFound(ev.Stream, ev.Registration)
		}
		return nil
	}
	// A message skipped by policy: its event commits with the evidence.
	return s.inTx(ctx, "add evidence", func(tx pgx.Tx) error {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "add evidence", err)
		}
		if !found {
			return notFound(ev.Stream, ev.Registration)
		}
		return s.registrationEvent(ctx, tx, push.KindSkipped, ev.Stream, ev.Registration, ev.Seq, push.ByPolicy, ev.Clean().Error, ev.At)
	})
}

// queueEvidence queues the insert of ev and the trim to push.MaxEvidence
// rows; the caller has queued, before them, a statement that locks the
// registration's row.
func queueEvidence(b *pgx.Batch, ev push.Evidence) {
	b.Queue(sqlInsertEvidence, evidenceArgs(ev)...)
	queueTrim(b, ev.Stream, ev.Registration)
}

// queueTrim queues the trim of a registration's evidence to the newest
// push.MaxEvidence rows.
func queueTrim(b *pgx.Batch, stream, id string) {
	b.Queue(sqlTrimEvidence, stream, id, push.MaxEvidence)
}

// evidenceArgs returns the parameters $1…$14 of insertEvidence: ev cleaned
// (push.Evidence.Clean: valid UTF-8, no NUL, bounded), as stores must.
func evidenceArgs(ev push.Evidence) []any {
	ev = ev.Clean()
	return []any{ev.Stream, ev.Registration, ev.At, clean(ev.Event), int64(min(ev.Seq, maxSeq)),
		ev.RecordID, ev.MessageID, ev.Attempt, ev.Status, []byte(ev.Body), ev.Location,
		int64(ev.Duration), ev.Error, nullTime(ev.NotBefore)}
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
// become U+FFFD. push.Evidence.Clean does this for every field but Event,
// which a caller of AddEvidence chooses.
func clean(s string) string {
	if validText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
