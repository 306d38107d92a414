package postgres

import (
	"cmp"
	"context"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Resend implements store.Store in one transaction: the cursor and the
// low-water mark read, the pending row in, and the event if it is new.
func (s *Store) Resend(ctx context.Context, stream, id string, seq uint64, at time.Time, by string) (queued bool, err error) {
	if err := cmp.Or(store.ValidateInstant("at", at), store.ValidatePause(by, "")); err != nil {
		return false, err
	}
	if !validKey(stream, id) {
		return false, store.NotFound(stream, id)
	}
	err = s.inTx(ctx, "resend", func(tx pgx.Tx) error {
		var (
			next, oldest uint64
			kinds        []string
			kind         string
		)
		err := tx.QueryRow(ctx, stmt("resend_from"), pgx.NamedArgs{"stream": stream, "id": id, "seq": int64(min(seq, math.MaxInt64))}).Scan(&next, &kinds, &oldest, &kind)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return store.NotFound(stream, id)
		case err != nil:
			return s.dbErr(ctx, "resend: read the cursor", err)
		}
		if err := store.CheckResend(stream, seq, next, oldest, kinds, kind); err != nil {
			return err
		}
		var added bool
		err = tx.QueryRow(ctx, stmt("insert_resend"), pgx.NamedArgs{"stream": stream, "id": id, "seq": int64(seq), "at": at, "by": by}).Scan(&added)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil // pending already
		case err != nil:
			return s.dbErr(ctx, "resend", err)
		}
		st, err := scanStatus(tx.QueryRow(ctx, stmt("get"), pgx.NamedArgs{"stream": stream, "id": id}))
		if err != nil {
			return s.dbErr(ctx, "resend: read the registration", err)
		}
		e, ok := store.RegistrationEvent(store.KindResend, st.Registration, seq, by, "", at)
		queued = true
		return s.event(ctx, tx, e, ok)
	})
	return queued && err == nil, err
}

// DueResends implements store.Store in one statement (SKIP LOCKED: claims
// racing never wait for each other nor take one resend twice).
func (s *Store) DueResends(ctx context.Context, q store.DueQuery) (store.ResendBatch, error) {
	if err := cmp.Or(q.Validate(), journal.ValidateID("lease owner", q.Owner)); err != nil {
		return store.ResendBatch{}, err
	}
	var batch store.ResendBatch
	rs, err := query(ctx, s, "claim pending resends of "+q.Namespace, nil, func(row pgx.CollectableRow) (store.Resend, error) {
		var r store.Resend
		st, err := scanStatus(row, &r.Seq, &r.At, &r.By, &batch.More)
		r.Registration, r.At, r.Owner = st.Registration, r.At.UTC(), q.Owner
		return r, err
	}, stmt("due_resends"), pgx.NamedArgs{"namespace": q.Namespace, "at": q.At, "limit": q.Limit, "owner": q.Owner, "lease_until": q.LeaseUntil})
	if err != nil {
		return store.ResendBatch{}, err
	}
	batch.Resends = rs
	s.sealer.OpenResends(batch.Resends)
	return batch, nil
}

// RenewResends implements store.Store in one statement.
func (s *Store) RenewResends(ctx context.Context, until time.Time, claims []store.ResendClaim) ([]store.ResendClaim, error) {
	if err := store.ValidateRenew(until, claims); err != nil {
		return nil, err
	}
	streams, ids, seqs, owners := make([]string, 0, len(claims)), make([]string, 0, len(claims)), make([]int64, 0, len(claims)), make([]string, 0, len(claims))
	for _, c := range claims {
		if validKey(c.Stream, c.ID) && validText(c.Owner) && c.Seq <= maxSeq { // what PostgreSQL cannot hold names no lease
			streams, ids, seqs, owners = append(streams, c.Stream), append(ids, c.ID), append(seqs, int64(c.Seq)), append(owners, c.Owner)
		}
	}
	return query(ctx, s, "renew resends' leases", nil, func(row pgx.CollectableRow) (store.ResendClaim, error) {
		var c store.ResendClaim
		err := row.Scan(&c.Stream, &c.ID, &c.Seq, &c.Owner)
		return c, err
	}, stmt("renew_resends"), pgx.NamedArgs{"until": until, "streams": streams, "ids": ids, "seqs": seqs, "owners": owners})
}

// Resent implements store.Store: the pending row deleted, the evidence in
// and trimmed, in one implicit transaction.
func (s *Store) Resent(ctx context.Context, c store.ResendClaim, ev store.Evidence) error {
	if err := cmp.Or(c.Validate(), store.ValidateInstant("evidence at", ev.At), checkSeq("seq", c.Seq)); err != nil {
		return err
	}
	if !validKey(c.Stream, c.ID) {
		return store.NotFound(c.Stream, c.ID)
	}
	ev.Stream, ev.Registration, ev.Event, ev.Seq = c.Stream, c.ID, store.EventResent, c.Seq
	args := evidenceArgs(ev)
	args["owner"] = c.Owner
	var (
		exists, applied bool
	)
	b := &pgx.Batch{}
	b.Queue(stmt("registration_exists"), pgx.NamedArgs{"stream": c.Stream, "id": c.ID}).QueryRow(func(row pgx.Row) error { return row.Scan(&exists) })
	b.Queue(stmt("resent"), args).Exec(func(tag pgconn.CommandTag) error {
		applied = tag.RowsAffected() > 0
		return nil
	})
	queueTrim(b, c.Stream, c.ID)
	if err := s.dbErr(ctx, "record a resend", s.pool.SendBatch(ctx, b).Close()); err != nil {
		return err
	}
	switch {
	case applied:
		return nil
	case !exists:
		return store.NotFound(c.Stream, c.ID)
	}
	return c.LeaseLost()
}
