package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// regState is what a registration update returns (RETURNING stateColumns):
// enough to keep its stream's wake marker right.
type regState struct {
	nextSeq       int64
	parked        bool
	nextAttemptAt sql.NullInt64
	leaseUntil    sql.NullInt64
}

func scanState(row *sql.Row, stream, id, op string) (regState, error) {
	var st regState
	err := row.Scan(&st.nextSeq, &st.parked, &st.nextAttemptAt, &st.leaseUntil)
	if errors.Is(err, sql.ErrNoRows) {
		return st, notFound(stream, id)
	}
	if err != nil {
		return st, translate(op, err)
	}
	return st, nil
}

// rewake keeps the stream's wake marker no later than the instant this
// registration becomes due, if it is unparked and lags the head (doc.go,
// "Idle costs nothing"). It only ever lowers wake_at; Due raises it.
func rewake(ctx context.Context, tx *sql.Tx, stream string, st regState) error {
	if st.parked {
		return nil
	}
	due := int64(dueNow)
	if st.nextAttemptAt.Valid {
		due = max(due, st.nextAttemptAt.Int64)
	}
	if st.leaseUntil.Valid {
		due = max(due, st.leaseUntil.Int64)
	}
	_, err := tx.ExecContext(ctx, sqlRewake, due, stream, st.nextSeq)
	return translate("wake stream", err)
}

// fence checks, inside the write transaction, that claim c still holds the
// registration's lease and that nextSeq is a cursor its stream can have. The
// update that follows repeats the owner in its WHERE clause; the single
// writer makes the two one atomic step.
func fence(ctx context.Context, tx *sql.Tx, c push.Claim, nextSeq uint64) error {
	if err := c.Validate(); err != nil {
		return err
	}
	var (
		owner string
		head  int64
	)
	err := tx.QueryRowContext(ctx, sqlFence, c.Stream, c.ID).Scan(&owner, &head)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(c.Stream, c.ID)
	}
	if err != nil {
		return translate("check lease", err)
	}
	if owner != c.Owner {
		return fmt.Errorf("registration %s, claim %s: %w", push.Name(c.Stream, c.ID), c.Owner, push.ErrLeaseLost)
	}
	return store.ValidateCursor(nextSeq, uint64(head))
}

// Advance implements push.Store: next_seq = MAX(next_seq, nextSeq) in one
// statement, fenced by the claim, so racing workers never move a cursor back.
func (s *Store) Advance(ctx context.Context, c push.Claim, nextSeq uint64) error {
	return s.save(ctx, "advance", sqlAdvance, c, nextSeq)
}

// Checkpoint implements push.Store: Advance's statement without the lease's
// release.
func (s *Store) Checkpoint(ctx context.Context, c push.Claim, nextSeq uint64) error {
	return s.save(ctx, "checkpoint", sqlCheckpoint, c, nextSeq)
}

// save runs query (sqlAdvance or sqlCheckpoint), fenced by the claim, and
// keeps the stream's wake marker right.
func (s *Store) save(ctx context.Context, op, query string, c push.Claim, nextSeq uint64) error {
	n, err := seqArg("next seq", nextSeq)
	if err != nil {
		return err
	}
	return s.writeTo(ctx, op, c.Stream, c.ID, func(tx *sql.Tx) error {
		if err := fence(ctx, tx, c, nextSeq); err != nil {
			return err
		}
		st, err := scanState(tx.QueryRowContext(ctx, query, n, c.Stream, c.ID, c.Owner), c.Stream, c.ID, op)
		if err != nil {
			return err
		}
		return rewake(ctx, tx, c.Stream, st)
	})
}

// Retry implements push.Store: the cursor, the attempt count, the schedule,
// the lease and the evidence in one transaction, fenced by the claim.
func (s *Store) Retry(ctx context.Context, c push.Claim, nextSeq uint64, notBefore time.Time, ev push.Evidence) error {
	n, err := seqArg("next seq", nextSeq)
	if err != nil {
		return err
	}
	if err := errors.Join(push.ValidateInstant("not before", notBefore), push.ValidateInstant("evidence at", ev.At)); err != nil {
		return err
	}
	nb, err := nanos("not before", notBefore)
	if err != nil {
		return err
	}
	return s.writeTo(ctx, "retry", c.Stream, c.ID, func(tx *sql.Tx) error {
		if err := fence(ctx, tx, c, nextSeq); err != nil {
			return err
		}
		st, err := scanState(tx.QueryRowContext(ctx, sqlRetry, n, nb, ev.Clean().Error, c.Stream, c.ID, c.Owner), c.Stream, c.ID, "retry")
		if err != nil {
			return err
		}
		if err := addEvidence(ctx, tx, c.Stream, c.ID, ev); err != nil {
			return err
		}
		return rewake(ctx, tx, c.Stream, st)
	})
}

// Park implements push.Store, fenced by the claim.
func (s *Store) Park(ctx context.Context, c push.Claim, nextSeq uint64, ev push.Evidence) error {
	n, err := seqArg("next seq", nextSeq)
	if err != nil {
		return err
	}
	if err := push.ValidateInstant("evidence at", ev.At); err != nil {
		return err
	}
	at, err := nanos("evidence at", ev.At)
	if err != nil {
		return err
	}
	return s.writeTo(ctx, "park", c.Stream, c.ID, func(tx *sql.Tx) error {
		if err := fence(ctx, tx, c, nextSeq); err != nil {
			return err
		}
		_, err := scanState(tx.QueryRowContext(ctx, sqlPark, n, at, ev.Clean().Error, c.Stream, c.ID, c.Owner), c.Stream, c.ID, "park")
		if err != nil {
			return err
		}
		if err := addEvidence(ctx, tx, c.Stream, c.ID, ev); err != nil { // parked: the stream's wake marker need not move
			return err
		}
		return s.registrationEvent(ctx, tx, push.KindParked, c.Stream, c.ID, func(st push.Status) uint64 { return st.NextSeq }, "", ev.Error, ev.At)
	})
}

// Unpark implements push.Store.
func (s *Store) Unpark(ctx context.Context, stream, id string, at time.Time) error {
	if err := push.ValidateInstant("at", at); err != nil {
		return err
	}
	atN, err := nanos("at", at)
	if err != nil {
		return err
	}
	return s.writeTo(ctx, "unpark", stream, id, func(tx *sql.Tx) error {
		st, err := scanState(tx.QueryRowContext(ctx, sqlUnpark, atN, stream, id), stream, id, "unpark")
		if errors.Is(err, journal.ErrNotFound) {
			_, err := getStatus(ctx, tx, stream, id)
			return err // nil when it exists and was not parked: nothing to do
		}
		if err != nil {
			return err
		}
		if err := addEvidence(ctx, tx, stream, id, push.Evidence{At: at, Event: push.EventUnparked, Seq: uint64(st.nextSeq)}); err != nil {
			return err
		}
		if err := s.registrationEvent(ctx, tx, push.KindUnparked, stream, id, func(st push.Status) uint64 { return st.NextSeq }, "", "", at); err != nil {
			return err
		}
		return rewake(ctx, tx, stream, st)
	})
}

// Skip implements push.Store.
func (s *Store) Skip(ctx context.Context, stream, id string, toSeq uint64, at time.Time, reason string) error {
	return s.move(ctx, "skip", stream, id, toSeq, at, func(st push.Status) (push.Evidence, error) {
		if err := store.ValidateSkip(st.NextSeq, st.Head, toSeq); err != nil {
			return push.Evidence{}, err
		}
		return push.Evidence{At: at, Event: push.EventSkip, Seq: st.NextSeq, Error: reason}, nil
	}, push.KindSkipped)
}

// Rewind implements push.Store.
func (s *Store) Rewind(ctx context.Context, stream, id string, toSeq uint64, at time.Time) error {
	return s.move(ctx, "rewind", stream, id, toSeq, at, func(st push.Status) (push.Evidence, error) {
		if err := store.ValidateRewind(st.NextSeq, st.Head, toSeq); err != nil {
			return push.Evidence{}, err
		}
		return push.Evidence{At: at, Event: push.EventRewind, Seq: st.NextSeq, Error: fmt.Sprintf("rewound from #%d to #%d", st.NextSeq, toSeq)}, nil
	}, "")
}

// move is the operator's cursor move: check it against the current state,
// store the evidence, set the cursor, due at once.
func (s *Store) move(ctx context.Context, op, stream, id string, toSeq uint64, at time.Time,
	check func(push.Status) (push.Evidence, error), eventKind string) error {
	if err := push.ValidateInstant("at", at); err != nil {
		return err
	}
	atN, err := nanos("at", at)
	if err != nil {
		return err
	}
	return s.writeTo(ctx, op, stream, id, func(tx *sql.Tx) error {
		cur, err := getStatus(ctx, tx, stream, id)
		if err != nil {
			return err
		}
		ev, err := check(cur)
		if err != nil {
			return err
		}
		var oldest int64
		if err := tx.QueryRowContext(ctx, sqlOldest, stream).Scan(&oldest); err != nil {
			return translate(op+": read the low-water mark", err)
		}
		if err := store.CheckRetained(stream, toSeq, uint64(oldest)); err != nil {
			return err
		}
		to, err := seqArg("to seq", toSeq)
		if err != nil {
			return err
		}
		if err := addEvidence(ctx, tx, stream, id, ev); err != nil {
			return err
		}
		// Clearing the lease fences out a turn in flight: it can no longer
		// undo the operator's move.
		st, err := scanState(tx.QueryRowContext(ctx, sqlMove, to, atN, stream, id), stream, id, op)
		if err != nil {
			return err
		}
		if eventKind != "" {
			if e, ok := push.RegistrationEvent(eventKind, cur.Registration, toSeq, push.ByOperator, ev.Error, at); ok {
				if err := s.appendEvent(ctx, tx, e); err != nil {
					return err
				}
			}
		}
		return rewake(ctx, tx, stream, st)
	})
}

// AddEvidence implements push.Store.
func (s *Store) AddEvidence(ctx context.Context, ev push.Evidence) error {
	return s.write(ctx, "add evidence", func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, sqlRegistrationExists, ev.Stream, ev.Registration).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(ev.Stream, ev.Registration)
		}
		if err != nil {
			return translate("add evidence", err)
		}
		if err := addEvidence(ctx, tx, ev.Stream, ev.Registration, ev); err != nil {
			return err
		}
		if ev.Event != push.EventSkipped {
			return nil
		}
		return s.registrationEvent(ctx, tx, push.KindSkipped, ev.Stream, ev.Registration, func(push.Status) uint64 { return ev.Seq }, push.ByPolicy, ev.Error, ev.At)
	})
}

// addEvidence inserts one row and drops the registration's rows beyond the
// newest push.MaxEvidence.
func addEvidence(ctx context.Context, tx *sql.Tx, stream, id string, ev push.Evidence) error {
	ev = ev.Clean()
	at, err := nanos("evidence at", ev.At)
	if err != nil {
		return err
	}
	notBefore, err := nanos("evidence not before", ev.NotBefore)
	if err != nil {
		return err
	}
	seq, err := seqArg("evidence seq", ev.Seq)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, sqlInsertEvidence,
		stream, id, at, ev.Event, seq, ev.RecordID, ev.MessageID, ev.Attempt, ev.Status, ev.Body, ev.Location,
		int64(ev.Duration), ev.Error, notBefore)
	if err != nil {
		return translate("add evidence", err)
	}
	_, err = tx.ExecContext(ctx, sqlTrimEvidence, stream, id, push.MaxEvidence)
	return translate("trim evidence", err)
}

// Evidence implements push.Store.
func (s *Store) Evidence(ctx context.Context, stream, id string, limit int) ([]push.Evidence, error) {
	if limit < 0 {
		return nil, journal.Invalid("limit", "is %d: it must not be negative", limit)
	}
	if limit == 0 || limit > push.MaxEvidence {
		limit = push.MaxEvidence
	}
	var out []push.Evidence
	err := s.read(ctx, "evidence", func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, sqlRegistrationExists, stream, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(stream, id)
		}
		if err != nil {
			return translate("evidence", err)
		}
		rows, err := tx.QueryContext(ctx, sqlEvidence, stream, id, limit)
		if err != nil {
			return translate("evidence", err)
		}
		defer rows.Close()
		for rows.Next() {
			ev := push.Evidence{Stream: stream, Registration: id}
			var (
				at, notBefore sql.NullInt64
				seq, duration int64
			)
			if err := rows.Scan(&at, &ev.Event, &seq, &ev.RecordID, &ev.MessageID, &ev.Attempt, &ev.Status, &ev.Body,
				&ev.Location, &duration, &ev.Error, &notBefore); err != nil {
				return translate("evidence", err)
			}
			ev.At, ev.NotBefore, ev.Seq, ev.Duration = instant(at), instant(notBefore), uint64(seq), time.Duration(duration)
			out = append(out, ev)
		}
		return translate("evidence", rows.Err())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// registrationEvent appends, in tx (the write transaction of the change),
// herald's operational event of kind about registration stream/id as it
// stands after the change (push.RegistrationEvent; cursor picks the cursor
// it reports).
func (s *Store) registrationEvent(ctx context.Context, tx *sql.Tx, kind, stream, id string,
	cursor func(push.Status) uint64, by, reason string, at time.Time) error {
	st, err := getStatus(ctx, tx, stream, id)
	if err != nil {
		return err
	}
	e, ok := push.RegistrationEvent(kind, st.Registration, cursor(st), by, reason, at)
	if !ok {
		return nil
	}
	return s.appendEvent(ctx, tx, e)
}

// appendEvent appends one operational event to push.EventsStream in tx.
func (s *Store) appendEvent(ctx context.Context, tx *sql.Tx, e journal.Entry) error {
	if _, err := s.appendTx(ctx, tx, push.EventsStream, []journal.Entry{e}); err != nil {
		return fmt.Errorf("sqlite: append operational event %s: %w", e.Kind, err)
	}
	return nil
}
