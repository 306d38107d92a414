package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Advance implements store.Store.
func (s *Store) Advance(ctx context.Context, c store.Claim, nextSeq uint64) error {
	return s.saveCursor(ctx, "advance", stmt("advance"), c, nextSeq)
}

// Checkpoint implements store.Store: Advance that keeps the lease.
func (s *Store) Checkpoint(ctx context.Context, c store.Claim, nextSeq uint64) error {
	return s.saveCursor(ctx, "checkpoint", stmt("checkpoint"), c, nextSeq)
}

func (s *Store) saveCursor(ctx context.Context, op, write string, c store.Claim, nextSeq uint64) error {
	if err := checkCursor(nextSeq); err != nil {
		return err
	}
	return s.fenced(ctx, op, c, nextSeq, false, nil, write, pgx.NamedArgs{"stream": c.Stream, "id": c.ID, "owner": c.Owner, "next_seq": int64(nextSeq)})
}

// Pace implements store.Store.
func (s *Store) Pace(ctx context.Context, c store.Claim, until time.Time) error {
	if err := store.ValidateInstant("paced until", until); err != nil {
		return err
	}
	return s.fenced(ctx, "pace", c, 1, false, nil, stmt("pace"), pgx.NamedArgs{"stream": c.Stream, "id": c.ID, "owner": c.Owner, "next_seq": int64(1), "until": until})
}

// Renew implements store.Store in one statement.
func (s *Store) Renew(ctx context.Context, until time.Time, claims []store.Claim) ([]store.Claim, error) {
	if err := store.ValidateRenew(until, claims); err != nil {
		return nil, err
	}
	claims = slices.Clone(claims)
	slices.SortFunc(claims, func(a, b store.Claim) int {
		return store.CompareKeys(store.Key{Stream: a.Stream, ID: a.ID}, store.Key{Stream: b.Stream, ID: b.ID})
	})
	streams, ids, owners := make([]string, 0, len(claims)), make([]string, 0, len(claims)), make([]string, 0, len(claims))
	for _, c := range claims {
		if validKey(c.Stream, c.ID) && validText(c.Owner) { // text PostgreSQL cannot hold names no lease
			streams, ids, owners = append(streams, c.Stream), append(ids, c.ID), append(owners, c.Owner)
		}
	}
	return query(ctx, s, "renew leases", nil, func(row pgx.CollectableRow) (store.Claim, error) {
		var c store.Claim
		err := row.Scan(&c.Stream, &c.ID, &c.Owner)
		return c, err
	}, stmt("renew"), pgx.NamedArgs{"until": until, "streams": streams, "ids": ids, "owners": owners})
}

// Retry implements store.Store: the cursor reached, the failure count, the
// next attempt and the evidence, in one statement.
func (s *Store) Retry(ctx context.Context, c store.Claim, nextSeq uint64, notBefore time.Time, ev store.Evidence) error {
	instants := errors.Join(store.ValidateInstant("not before", notBefore), store.ValidateInstant("evidence at", ev.At))
	return s.fail(ctx, "retry", stmt("retry"), c, nextSeq, ev, instants, nil, pgx.NamedArgs{"not_before": notBefore})
}

// Park implements store.Store, as Retry does.
func (s *Store) Park(ctx context.Context, c store.Claim, nextSeq uint64, ev store.Evidence) error {
	tell := func(f fence) (journal.Entry, bool) {
		return store.RegistrationEvent(store.KindParked, f.reg, max(f.reg.NextSeq, nextSeq), "", ev.Error, ev.At)
	}
	return s.fail(ctx, "park", stmt("park"), c, nextSeq, ev, store.ValidateInstant("evidence at", ev.At), tell, nil)
}

func (s *Store) fail(ctx context.Context, op, write string, c store.Claim, nextSeq uint64, ev store.Evidence, instants error,
	tell func(fence) (journal.Entry, bool), args pgx.NamedArgs) error {
	if err := cmp.Or(checkCursor(nextSeq), instants); err != nil {
		return err
	}
	ev.Stream, ev.Registration = c.Stream, c.ID
	named := evidenceArgs(ev)
	named["owner"], named["next_seq"] = c.Owner, int64(nextSeq)
	maps.Copy(named, args)
	return s.fenced(ctx, op, c, nextSeq, true, tell, write, named)
}

// Complete implements store.Store: the registration and its evidence (ON
// DELETE CASCADE) are deleted; the journal keeps its records.
func (s *Store) Complete(ctx context.Context, c store.Claim) error {
	tell := func(f fence) (journal.Entry, bool) {
		// The instant is the claim's: Due stamped it as NextAttemptAt.
		return store.RegistrationEvent(store.KindCompleted, f.reg, f.head+1, "", "", f.reg.NextAttemptAt)
	}
	return s.fenced(ctx, "complete", c, 0, false, tell, stmt("complete"), pgx.NamedArgs{"stream": c.Stream, "id": c.ID, "owner": c.Owner})
}

// fence is what statement fence read under the registration's row lock.
type fence struct {
	found bool
	reg   store.Registration
	head  uint64
}

func (f *fence) queue(b *pgx.Batch, c store.Claim) {
	b.Queue(stmt("fence"), pgx.NamedArgs{"stream": c.Stream, "id": c.ID}).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		if f.found = rows.Next(); !f.found {
			return rows.Err()
		}
		r := &f.reg
		r.Stream, r.ID = c.Stream, c.ID
		err := rows.Scan(&r.LeaseOwner, &f.head, &r.NextSeq, &r.HostFailures, &r.Namespace, &r.URL, &r.NextAttemptAt, &r.Parked, &r.Paused)
		r.NextAttemptAt = r.NextAttemptAt.UTC()
		return err
	})
}

// refusal is why a write under claim c cannot apply (nextSeq 0: it writes
// no cursor), or nil.
func (f fence) refusal(op string, c store.Claim, nextSeq uint64) error {
	switch {
	case !f.found:
		return store.NotFound(c.Stream, c.ID)
	case f.reg.LeaseOwner != c.Owner:
		return fmt.Errorf("%s: %w", op, c.LeaseLost())
	case nextSeq > 0:
		return store.ValidateCursor(nextSeq, f.head)
	}
	return nil
}

// notApplied is the error of a fenced write that did not apply.
func (f fence) notApplied(op string, c store.Claim, nextSeq uint64) error {
	if err := f.refusal(op, c, nextSeq); err != nil {
		return err
	}
	return fmt.Errorf("postgres: %s %s: the write did not apply under a held lease and a valid cursor", op, store.Name(c.Stream, c.ID))
}

// fenced runs write after statement fence (package doc, "Claiming and fencing"),
// then the evidence's trim if evidence, in one implicit transaction, or with
// tell in an explicit one that appends tell's event if write applied. A
// write that did not apply returns notApplied's error.
func (s *Store) fenced(ctx context.Context, op string, c store.Claim, nextSeq uint64, evidence bool,
	tell func(fence) (journal.Entry, bool), write string, args pgx.NamedArgs) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if !validKey(c.Stream, c.ID) {
		return store.NotFound(c.Stream, c.ID)
	}
	var (
		fc      fence
		applied bool
	)
	b := &pgx.Batch{}
	fc.queue(b, c)
	b.Queue(write, args).Exec(func(tag pgconn.CommandTag) error {
		applied = tag.RowsAffected() > 0
		return nil
	})
	if evidence {
		queueTrim(b, c.Stream, c.ID)
	}
	var err error
	if tell == nil {
		err = s.dbErr(ctx, op, s.pool.SendBatch(ctx, b).Close())
	} else {
		err = s.inTx(ctx, op, func(tx pgx.Tx) error {
			if err := tx.SendBatch(ctx, b).Close(); err != nil || !applied {
				return s.dbErr(ctx, op, err)
			}
			e, ok := tell(fc)
			return s.event(ctx, tx, e, ok)
		})
	}
	if err != nil || applied {
		return err
	}
	return fc.notApplied(op, c, nextSeq)
}

// AdvanceBatch implements store.AdvanceBatcher: Advance for many saves in one
// round trip and one commit, locking the rows in key order. A save that
// repeats an earlier one's key (two turns of one registration, one fenced
// out) is an Advance of its own after the batch.
func (s *Store) AdvanceBatch(ctx context.Context, saves []store.CursorSave) ([]error, error) {
	errs := make([]error, len(saves))
	var sent, later []int // indexes into saves
	seen := map[store.Key]bool{}
	key := func(i int) store.Key { return store.Key{Stream: saves[i].Claim.Stream, ID: saves[i].Claim.ID} }
	for i, sv := range saves {
		if errs[i] = checkCursor(sv.NextSeq); errs[i] == nil { // Advance's checks, in its order
			errs[i] = sv.Claim.Validate()
		}
		switch k := key(i); {
		case errs[i] != nil:
		case !validKey(k.Stream, k.ID):
			errs[i] = store.NotFound(k.Stream, k.ID)
		case seen[k]:
			later = append(later, i)
		default:
			seen[k], sent = true, append(sent, i)
		}
	}
	slices.SortFunc(sent, func(a, b int) int { return store.CompareKeys(key(a), key(b)) })
	n := len(sent)
	streams, ids, owners, nexts := make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for j, i := range sent {
		c := saves[i].Claim
		streams[j], ids[j], owners[j], nexts[j] = c.Stream, c.ID, c.Owner, int64(saves[i].NextSeq)
	}
	fences, applied := make([]fence, n+1), make([]bool, n+1) // by ordinality, from 1
	if n > 0 {
		var ord int
		f := fence{found: true}
		b := &pgx.Batch{}
		b.Queue(stmt("generic_plans"))
		b.Queue(stmt("fence_batch"), pgx.NamedArgs{"streams": streams, "ids": ids}).Query(func(rows pgx.Rows) error {
			_, err := pgx.ForEachRow(rows, []any{&ord, &f.reg.LeaseOwner, &f.head}, func() error { fences[ord] = f; return nil })
			return err
		})
		b.Queue(stmt("advance_batch"), pgx.NamedArgs{"streams": streams, "ids": ids, "owners": owners, "next_seqs": nexts}).Query(func(rows pgx.Rows) error {
			_, err := pgx.ForEachRow(rows, []any{&ord}, func() error { applied[ord] = true; return nil })
			return err
		})
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return nil, s.dbErr(ctx, "advance a batch", err)
		}
	}
	for j, i := range sent {
		if !applied[j+1] {
			errs[i] = fences[j+1].notApplied("advance", saves[i].Claim, saves[i].NextSeq)
		}
	}
	for _, i := range later {
		errs[i] = s.Advance(ctx, saves[i].Claim, saves[i].NextSeq)
	}
	return errs, nil
}

// checkCursor refuses a cursor no stream can have: 0, or beyond bigint.
func checkCursor(nextSeq uint64) error {
	if nextSeq < 1 {
		return journal.Invalid("next seq", "is 0: a cursor is 1-based")
	}
	return checkSeq("next seq", nextSeq)
}

// Unpark implements store.Store.
func (s *Store) Unpark(ctx context.Context, stream, id string, at time.Time) error {
	return s.operator(ctx, "unpark", stream, id, at, func(f fence, _ uint64) (*change, error) {
		if !f.reg.Parked || f.reg.Paused { // a pause ends with Resume
			return nil, nil
		}
		return &change{write: stmt("unpark"), args: pgx.NamedArgs{"at": at}, ev: store.Evidence{Event: store.EventUnparked, Seq: f.reg.NextSeq},
			kind: store.KindUnparked, cursor: f.reg.NextSeq}, nil
	})
}

// Pause implements store.Store.
func (s *Store) Pause(ctx context.Context, stream, id string, at time.Time, by, reason string) error {
	if err := store.ValidatePause(by, reason); err != nil {
		return err
	}
	return s.operator(ctx, "pause", stream, id, at, func(f fence, _ uint64) (*change, error) {
		if f.reg.Paused {
			return nil, nil
		}
		why := store.PauseText(by, reason)
		return &change{write: stmt("pause"), args: pgx.NamedArgs{"at": at, "last_error": why}, ev: store.Evidence{Event: store.EventPaused, Seq: f.reg.NextSeq, Error: why},
			kind: store.KindPaused, by: by, reason: &reason, cursor: f.reg.NextSeq}, nil
	})
}

// Resume implements store.Store.
func (s *Store) Resume(ctx context.Context, stream, id string, at time.Time, by string) error {
	if err := store.ValidatePause(by, ""); err != nil {
		return err
	}
	return s.operator(ctx, "resume", stream, id, at, func(f fence, _ uint64) (*change, error) {
		if !f.reg.Paused {
			return nil, nil
		}
		return &change{write: stmt("resume"), args: pgx.NamedArgs{"at": at, "last_error": ""}, ev: store.Evidence{Event: store.EventResumed, Seq: f.reg.NextSeq, Error: "resumed by " + by},
			kind: store.KindResumed, by: by, reason: new(string), cursor: f.reg.NextSeq}, nil
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

func (s *Store) move(ctx context.Context, op, stream, id string, toSeq uint64, at time.Time, skip bool, reason string) error {
	return s.operator(ctx, op, stream, id, at, func(f fence, oldest uint64) (*change, error) {
		ev, err := store.CheckMove(skip, stream, f.reg.NextSeq, f.head, oldest, toSeq, at, reason)
		c := &change{write: stmt("move"), args: pgx.NamedArgs{"next_seq": int64(toSeq), "at": at}, ev: ev}
		if skip {
			c.kind, c.by, c.cursor = store.KindSkipped, store.ByOperator, toSeq
		}
		return c, err
	})
}

// change is an operator's write, its evidence and event (kind "" for none).
type change struct {
	write    string
	args     pgx.NamedArgs // but the stream's and id's
	ev       store.Evidence
	kind, by string
	reason   *string // the event's, if not the evidence's error
	cursor   uint64
}

// operator makes an operator's change in one transaction: it locks and marks
// the stream row, locks the registration's, and asks decide for the change
// (nil: none; an error refuses it, changing nothing).
func (s *Store) operator(ctx context.Context, op, stream, id string, at time.Time, decide func(f fence, oldest uint64) (*change, error)) error {
	if err := store.ValidateInstant("at", at); err != nil {
		return err
	}
	if !validKey(stream, id) {
		return store.NotFound(stream, id)
	}
	return s.inTx(ctx, op, func(tx pgx.Tx) error {
		var (
			f      fence
			oldest uint64
		)
		b := &pgx.Batch{}
		b.Queue(stmt("mark_stream"), pgx.NamedArgs{"stream": stream}).QueryRow(func(row pgx.Row) error { return row.Scan(nil, nil, &oldest) })
		f.queue(b, store.Claim{Stream: stream, ID: id})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, op+": lock registration", err)
		}
		if !f.found {
			return store.NotFound(stream, id)
		}
		c, err := decide(f, oldest)
		if err != nil || c == nil {
			return err
		}
		c.ev.Stream, c.ev.Registration, c.ev.At = stream, id, at
		b = &pgx.Batch{}
		c.args["stream"], c.args["id"] = stream, id
		b.Queue(c.write, c.args)
		queueEvidence(b, c.ev)
		if err := tx.SendBatch(ctx, b).Close(); err != nil || c.kind == "" {
			return s.dbErr(ctx, op, err)
		}
		reason := c.ev.Error
		if c.reason != nil {
			reason = *c.reason
		}
		e, ok := store.RegistrationEvent(c.kind, f.reg, c.cursor, c.by, reason, at)
		return s.event(ctx, tx, e, ok)
	})
}

// event appends herald's event e, if ok, in tx, the change's transaction.
func (s *Store) event(ctx context.Context, tx pgx.Tx, e journal.Entry, ok bool) error {
	if !ok {
		return nil
	}
	if _, err := s.appendTx(ctx, tx, store.EventsStream, []journal.Entry{e}); err != nil {
		return fmt.Errorf("postgres: append operational event %s: %w", e.Kind, err)
	}
	s.poke() // it commits with tx: number it soon
	return nil
}

// AddEvidence implements store.Store. A message skipped by policy appends
// herald's event in the evidence's transaction.
func (s *Store) AddEvidence(ctx context.Context, ev store.Evidence) error {
	if !validKey(ev.Stream, ev.Registration) {
		return store.NotFound(ev.Stream, ev.Registration)
	}
	var f fence
	b := &pgx.Batch{}
	f.queue(b, store.Claim{Stream: ev.Stream, ID: ev.Registration})
	queueEvidence(b, ev)
	send := func(q querier) error {
		if err := q.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "add evidence", err)
		}
		if !f.found {
			return store.NotFound(ev.Stream, ev.Registration)
		}
		return nil
	}
	if ev.Event != store.EventSkipped {
		return send(s.pool)
	}
	return s.inTx(ctx, "add evidence", func(tx pgx.Tx) error {
		if err := send(tx); err != nil {
			return err
		}
		e, ok := store.RegistrationEvent(store.KindSkipped, f.reg, ev.Seq, store.ByPolicy, ev.Error, ev.At)
		return s.event(ctx, tx, e, ok)
	})
}

// queueEvidence queues ev and the trim, after a lock of the registration.
func queueEvidence(b *pgx.Batch, ev store.Evidence) {
	b.Queue(stmt("insert_evidence"), evidenceArgs(ev))
	queueTrim(b, ev.Stream, ev.Registration)
}

func queueTrim(b *pgx.Batch, stream, id string) {
	b.Queue(stmt("trim_evidence"), pgx.NamedArgs{"stream": stream, "id": id, "keep": store.MaxEvidence})
}

// evidenceArgs returns the parameters of sql/rules.sql's insert_evidence:
// ev cleaned, as stores must.
func evidenceArgs(ev store.Evidence) pgx.NamedArgs {
	ev = ev.Clean()
	return pgx.NamedArgs{"stream": ev.Stream, "id": ev.Registration, "at": ev.At, "event": clean(ev.Event),
		"seq": int64(min(ev.Seq, maxSeq)), "record_id": ev.RecordID, "message_id": ev.MessageID, "attempt": ev.Attempt,
		"status": ev.Status, "body": []byte(ev.Body), "location": ev.Location, "duration_ns": int64(ev.Duration),
		"error": ev.Error, "ev_not_before": nullTime(ev.NotBefore)}
}

// Evidence implements store.Store.
func (s *Store) Evidence(ctx context.Context, stream, id string, limit int) ([]store.Evidence, error) {
	limit, err := store.EvidenceLimit(limit)
	if err != nil {
		return nil, err
	}
	if !validKey(stream, id) {
		return nil, store.NotFound(stream, id)
	}
	var exists bool
	out := []store.Evidence{}
	b := &pgx.Batch{}
	b.Queue(stmt("registration_exists"), pgx.NamedArgs{"stream": stream, "id": id}).QueryRow(func(row pgx.Row) error { return row.Scan(&exists) })
	b.Queue(stmt("evidence"), pgx.NamedArgs{"stream": stream, "id": id, "limit": limit}).Query(appendTo(&out, func(row pgx.CollectableRow) (store.Evidence, error) {
		ev := store.Evidence{Stream: stream, Registration: id}
		var (
			body      []byte
			notBefore pgtype.Timestamptz
		)
		err := row.Scan(&ev.At, &ev.Event, &ev.Seq, &ev.RecordID, &ev.MessageID, &ev.Attempt, &ev.Status,
			&body, &ev.Location, &ev.Duration, &ev.Error, &notBefore)
		ev.At, ev.Body, ev.NotBefore = ev.At.UTC(), string(body), timeOf(notBefore)
		return ev, err
	}))
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, s.dbErr(ctx, "evidence", err)
	}
	if !exists {
		return nil, store.NotFound(stream, id)
	}
	return out, nil
}

// clean makes s storable as PostgreSQL text: invalid UTF-8 and NUL bytes
// become U+FFFD (store.Evidence.Clean does it for every field but Event).
func clean(s string) string {
	if validText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
