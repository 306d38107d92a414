package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// regState is what a registration update returns (state_columns, sql/rules.sql).
type regState struct {
	nextSeq       int64
	parked        bool
	nextAttemptAt sql.NullInt64
	leaseUntil    sql.NullInt64
}

// update runs a registration update that ends in state_columns and keeps the
// stream's wake marker no later than when the registration is due, unless it
// is parked (package doc, "Idle costs nothing").
func update(ctx context.Context, tx *sql.Tx, op, stream, id, query string, args ...any) (regState, error) {
	var st regState
	err := tx.QueryRowContext(ctx, query, args...).Scan(&st.nextSeq, &st.parked, &st.nextAttemptAt, &st.leaseUntil)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return st, store.NotFound(stream, id)
	case err != nil:
		return st, translate(op, err)
	case st.parked:
		return st, nil // never due
	}
	return st, rewake(ctx, tx, stream, st.nextSeq, st.nextAttemptAt, st.leaseUntil)
}

// rewake lowers the stream's wake marker to the latest of the instants given
// (a NULL is no bound) if the stream's head is at or past nextSeq.
func rewake(ctx context.Context, tx *sql.Tx, stream string, nextSeq int64, bounds ...sql.NullInt64) error {
	due := int64(dueNow)
	for _, b := range bounds {
		if b.Valid {
			due = max(due, b.Int64)
		}
	}
	_, err := tx.ExecContext(ctx, stmt("rewake"), due, stream, nextSeq)
	return translate("wake stream", err)
}

// fence is the registration as fenced read it, and n the cursor to save.
type fence struct {
	owner         string
	n, head, next int64
	hostFailures  int
}

// fenced runs fn in a write transaction once it has checked that claim c
// holds the registration's lease and that nextSeq is a cursor its stream can
// have. fn's update repeats the owner in its WHERE clause; the single writer
// makes the two one atomic step.
func (s *Store) fenced(ctx context.Context, op string, c store.Claim, nextSeq uint64, fn func(tx *sql.Tx, fc fence) error) error {
	n, err := fenceArgs(c, nextSeq)
	if err != nil {
		return err
	}
	return s.writeTo(ctx, op, c.Stream, c.ID, func(tx *sql.Tx) error { return fencedIn(ctx, tx, c, n, nextSeq, fn) })
}

// fenceArgs checks a write's claim and cursor before any transaction, and
// returns the cursor as stored.
func fenceArgs(c store.Claim, nextSeq uint64) (int64, error) {
	n, err := seqArg("next seq", nextSeq)
	return n, cmp.Or(err, c.Validate())
}

// fencedIn is fenced's check and write in tx.
func fencedIn(ctx context.Context, tx *sql.Tx, c store.Claim, n int64, nextSeq uint64, fn func(tx *sql.Tx, fc fence) error) error {
	fc := fence{n: n}
	err := tx.QueryRowContext(ctx, stmt("fence"), c.Stream, c.ID).Scan(&fc.owner, &fc.head, &fc.next, &fc.hostFailures)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.NotFound(c.Stream, c.ID)
	case err != nil:
		return translate("check lease", err)
	case fc.owner != c.Owner:
		return c.LeaseLost()
	}
	if err := store.ValidateCursor(nextSeq, uint64(fc.head)); err != nil {
		return err
	}
	return fn(tx, fc)
}

// AdvanceBatch implements store.AdvanceBatcher: the saves, in order, in one
// write transaction, so that concurrent turns' cursors cost one commit (one
// fsync). A save refused (lease lost, gone, a bad cursor) is refused before
// it writes: it changed nothing.
func (s *Store) AdvanceBatch(ctx context.Context, saves []store.CursorSave) ([]error, error) {
	errs := make([]error, len(saves))
	err := s.write(ctx, "advance a batch", func(tx *sql.Tx) error {
		for i, sv := range saves {
			n, err := fenceArgs(sv.Claim, sv.NextSeq)
			if err == nil {
				err = fencedIn(ctx, tx, sv.Claim, n, sv.NextSeq, saveWith(ctx, "advance", stmt("advance"), sv.Claim))
			}
			if err != nil && !refused(err) {
				return err // the database's failure: nothing applied
			}
			errs[i] = err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// refused says whether err is a write's refusal, not the database's failure.
func refused(err error) bool {
	return errors.Is(err, journal.ErrInvalid) || errors.Is(err, journal.ErrNotFound) || errors.Is(err, store.ErrLeaseLost)
}

// Advance implements store.Store.
func (s *Store) Advance(ctx context.Context, c store.Claim, nextSeq uint64) error {
	return s.save(ctx, "advance", stmt("advance"), c, nextSeq)
}

// Checkpoint implements store.Store.
func (s *Store) Checkpoint(ctx context.Context, c store.Claim, nextSeq uint64) error {
	return s.save(ctx, "checkpoint", stmt("checkpoint"), c, nextSeq)
}

func (s *Store) save(ctx context.Context, op, query string, c store.Claim, nextSeq uint64) error {
	return s.fenced(ctx, op, c, nextSeq, saveWith(ctx, op, query, c))
}

// saveWith is the write of a cursor save (statements advance, checkpoint)
// under claim c, once fenced.
func saveWith(ctx context.Context, op, query string, c store.Claim) func(tx *sql.Tx, fc fence) error {
	return func(tx *sql.Tx, fc fence) error {
		_, err := update(ctx, tx, op, c.Stream, c.ID, query, c.Stream, c.ID, c.Owner, fc.n)
		return err
	}
}

// Pace implements store.Store.
func (s *Store) Pace(ctx context.Context, c store.Claim, until time.Time) error {
	when, err := instantArg("paced until", until)
	if err != nil {
		return err
	}
	return s.fenced(ctx, "pace", c, 1, func(tx *sql.Tx, fc fence) error {
		_, err := update(ctx, tx, "pace", c.Stream, c.ID, stmt("pace"), c.Stream, c.ID, c.Owner, when)
		return err
	})
}

// Renew implements store.Store, one statement a claim in one transaction.
func (s *Store) Renew(ctx context.Context, until time.Time, claims []store.Claim) ([]store.Claim, error) {
	return renewEach(ctx, s, "renew leases", until, claims, func(tx *sql.Tx, when sql.NullInt64, c store.Claim) (sql.Result, error) {
		return tx.ExecContext(ctx, stmt("renew"), when, c.Stream, c.ID, c.Owner)
	})
}

// renewEach checks its arguments (store.ValidateRenew), runs renew for
// each claim in one write transaction, with until as the store keeps it,
// and returns the claims whose lease it extended (a row changed).
func renewEach[C interface{ Validate() error }](ctx context.Context, s *Store, op string, until time.Time, claims []C,
	renew func(*sql.Tx, sql.NullInt64, C) (sql.Result, error)) ([]C, error) {
	if err := store.ValidateRenew(until, claims); err != nil {
		return nil, err
	}
	when, err := instantArg("until", until)
	if err != nil {
		return nil, err
	}
	var renewed []C
	err = s.write(ctx, op, func(tx *sql.Tx) error {
		renewed = renewed[:0]
		for _, c := range claims {
			res, err := renew(tx, when, c)
			if err != nil {
				return translate(op, err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				renewed = append(renewed, c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return renewed, nil
}

// Retry implements store.Store.
func (s *Store) Retry(ctx context.Context, c store.Claim, nextSeq uint64, notBefore time.Time, ev store.Evidence) error {
	return s.fail(ctx, "retry", stmt("retry"), c, nextSeq, "not before", notBefore, ev)
}

// Park implements store.Store.
func (s *Store) Park(ctx context.Context, c store.Claim, nextSeq uint64, ev store.Evidence) error {
	return s.fail(ctx, "park", stmt("park"), c, nextSeq, "evidence at", ev.At, ev)
}

// fail is Retry's and Park's write, fenced by the claim; query sets the
// instant t (named field).
func (s *Store) fail(ctx context.Context, op, query string, c store.Claim, nextSeq uint64, field string, t time.Time, ev store.Evidence) error {
	when, err := instantArg(field, t)
	if err := cmp.Or(err, store.ValidateInstant("evidence at", ev.At)); err != nil {
		return err
	}
	return s.fenced(ctx, op, c, nextSeq, func(tx *sql.Tx, fc fence) error {
		st, err := update(ctx, tx, op, c.Stream, c.ID, query, c.Stream, c.ID, c.Owner, fc.n, when, ev.Clean().Error, ev.At.UnixNano())
		if err == nil {
			err = addEvidence(ctx, tx, c.Stream, c.ID, ev)
		}
		if err != nil || !st.parked {
			return err
		}
		// A park is told (herald/events).
		return s.registrationEvent(ctx, tx, store.KindParked, c.Stream, c.ID, uint64(st.nextSeq), "", ev.Error, ev.At)
	})
}

// Unpark implements store.Store.
func (s *Store) Unpark(ctx context.Context, stream, id string, at time.Time) error {
	atN, err := instantArg("at", at)
	if err != nil {
		return err
	}
	return s.operatorWrite(ctx, "unpark", stream, id, at, "", "", store.Evidence{At: at, Event: store.EventUnparked}, store.KindUnparked,
		stmt("unpark"), atN, stream, id)
}

// Pause implements store.Store.
func (s *Store) Pause(ctx context.Context, stream, id string, at time.Time, by, reason string) error {
	why := store.PauseText(by, reason)
	return s.pauseOrResume(ctx, "pause", stmt("pause"), stream, id, at, by, reason, why,
		store.Evidence{At: at, Event: store.EventPaused, Error: why}, store.KindPaused)
}

// Resume implements store.Store.
func (s *Store) Resume(ctx context.Context, stream, id string, at time.Time, by string) error {
	return s.pauseOrResume(ctx, "resume", stmt("resume"), stream, id, at, by, "", "",
		store.Evidence{At: at, Event: store.EventResumed, Error: "resumed by " + by}, store.KindResumed)
}

// pauseOrResume writes query (statements pause, resume) with lastError,
// then ev and an event of kind.
func (s *Store) pauseOrResume(ctx context.Context, op, query, stream, id string, at time.Time, by, reason, lastError string,
	ev store.Evidence, kind string) error {
	atN, err := instantArg("at", at)
	if err = cmp.Or(err, store.ValidatePause(by, reason)); err != nil {
		return err
	}
	return s.operatorWrite(ctx, op, stream, id, at, by, reason, ev, kind, query, atN, lastError, stream, id)
}

// operatorWrite runs query, an operator's update of stream/id, then ev at
// the cursor and an event of kind; a registration already so (no row
// updated) is left alone.
func (s *Store) operatorWrite(ctx context.Context, op, stream, id string, at time.Time, by, reason string, ev store.Evidence, kind string,
	query string, args ...any) error {
	return s.writeTo(ctx, op, stream, id, func(tx *sql.Tx) error {
		st, err := update(ctx, tx, op, stream, id, query, args...)
		if errors.Is(err, journal.ErrNotFound) {
			_, err := getStatus(ctx, tx, stream, id)
			return err // nil when it exists and is already so
		}
		if err == nil {
			ev.Seq = uint64(st.nextSeq)
			err = addEvidence(ctx, tx, stream, id, ev)
		}
		if err != nil {
			return err
		}
		return s.registrationEvent(ctx, tx, kind, stream, id, uint64(st.nextSeq), by, reason, at)
	})
}

// Skip implements store.Store.
func (s *Store) Skip(ctx context.Context, stream, id string, toSeq uint64, at time.Time, reason string) error {
	return s.move(ctx, "skip", stream, id, toSeq, at, true, reason)
}

// Rewind implements store.Store.
func (s *Store) Rewind(ctx context.Context, stream, id string, toSeq uint64, at time.Time) error {
	return s.move(ctx, "rewind", stream, id, toSeq, at, false, "")
}

// move is an operator's skip or rewind (store.CheckMove): the evidence, the
// cursor, due at once. Clearing the lease fences out a turn in flight: it
// can no longer undo the move.
func (s *Store) move(ctx context.Context, op, stream, id string, toSeq uint64, at time.Time, skip bool, reason string) error {
	atN, err := instantArg("at", at)
	if err != nil {
		return err
	}
	return s.writeTo(ctx, op, stream, id, func(tx *sql.Tx) error {
		next, head, oldest, err := cursorOf(ctx, tx, op, stream, id)
		if err != nil {
			return err
		}
		ev, err := store.CheckMove(skip, stream, uint64(next), uint64(head), uint64(oldest), toSeq, at, reason)
		if err != nil {
			return err
		}
		if err := addEvidence(ctx, tx, stream, id, ev); err != nil {
			return err
		}
		if _, err := update(ctx, tx, op, stream, id, stmt("move"), int64(toSeq), atN, stream, id); err != nil || !skip {
			return err
		}
		return s.registrationEvent(ctx, tx, store.KindSkipped, stream, id, toSeq, store.ByOperator, reason, at)
	})
}

// cursorOf reads stream/id's cursor, its stream's head and low-water mark.
func cursorOf(ctx context.Context, tx *sql.Tx, op, stream, id string) (next, head, oldest int64, err error) {
	err = tx.QueryRowContext(ctx, stmt("move_from"), stream, id).Scan(&next, &head, &oldest)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, 0, store.NotFound(stream, id)
	}
	return next, head, oldest, translate(op+": read the cursor", err)
}

// AddEvidence implements store.Store.
func (s *Store) AddEvidence(ctx context.Context, ev store.Evidence) error {
	return s.write(ctx, "add evidence", func(tx *sql.Tx) error {
		st, err := getStatus(ctx, tx, ev.Stream, ev.Registration)
		if err == nil {
			err = addEvidence(ctx, tx, ev.Stream, ev.Registration, ev)
		}
		if err != nil || ev.Event != store.EventSkipped {
			return err
		}
		e, ok := store.RegistrationEvent(store.KindSkipped, st.Registration, ev.Seq, store.ByPolicy, ev.Error, ev.At)
		return s.event(ctx, tx, e, ok)
	})
}

// addEvidence inserts one row and drops the registration's rows beyond the
// newest store.MaxEvidence.
func addEvidence(ctx context.Context, tx *sql.Tx, stream, id string, ev store.Evidence) error {
	ev = ev.Clean()
	at, err1 := nanos("evidence at", ev.At)
	notBefore, err2 := nanos("evidence not before", ev.NotBefore)
	seq, err3 := seqArg("evidence seq", ev.Seq)
	if err := cmp.Or(err1, err2, err3); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, stmt("insert_evidence"),
		stream, id, at, ev.Event, seq, ev.RecordID, ev.MessageID, ev.Attempt, ev.Status, ev.Body, ev.Location,
		int64(ev.Duration), ev.Error, notBefore)
	if err != nil {
		return translate("add evidence", err)
	}
	_, err = tx.ExecContext(ctx, stmt("trim_evidence"), stream, id, store.MaxEvidence)
	return translate("trim evidence", err)
}

// Evidence implements store.Store.
func (s *Store) Evidence(ctx context.Context, stream, id string, limit int) ([]store.Evidence, error) {
	limit, err := store.EvidenceLimit(limit)
	if err != nil {
		return nil, err
	}
	var out []store.Evidence
	err = s.read(ctx, "evidence", func(tx *sql.Tx) error {
		if _, err := getStatus(ctx, tx, stream, id); err != nil {
			return err
		}
		out, err = queryAll(ctx, tx, "evidence", nil, func(sc scanner) (store.Evidence, error) {
			ev := store.Evidence{Stream: stream, Registration: id}
			var (
				at, notBefore sql.NullInt64
				seq, duration int64
			)
			err := sc.Scan(&at, &ev.Event, &seq, &ev.RecordID, &ev.MessageID, &ev.Attempt, &ev.Status, &ev.Body,
				&ev.Location, &duration, &ev.Error, &notBefore)
			ev.At, ev.NotBefore, ev.Seq, ev.Duration = instant(at), instant(notBefore), uint64(seq), time.Duration(duration)
			return ev, err
		}, stmt("evidence"), stream, id, limit)
		return err
	})
	return out, err
}

// registrationEvent appends, in tx, herald's event of kind about stream/id.
func (s *Store) registrationEvent(ctx context.Context, tx *sql.Tx, kind, stream, id string, cursor uint64, by, reason string, at time.Time) error {
	st, err := getStatus(ctx, tx, stream, id)
	if err != nil {
		return err
	}
	e, ok := store.RegistrationEvent(kind, st.Registration, cursor, by, reason, at)
	return s.event(ctx, tx, e, ok)
}

// event appends, in tx, one of herald's operational events, if ok.
func (s *Store) event(ctx context.Context, tx *sql.Tx, e journal.Entry, ok bool) error {
	if !ok {
		return nil
	}
	if _, err := s.appendTx(ctx, tx, store.EventsStream, []journal.Entry{e}); err != nil {
		return fmt.Errorf("sqlite: append operational event %s: %w", e.Kind, err)
	}
	return nil
}
