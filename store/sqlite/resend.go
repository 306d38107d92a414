package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/heraldpush/herald/store"
)

// Resend implements store.Store.
func (s *Store) Resend(ctx context.Context, stream, id string, seq uint64, at time.Time, by string) (queued bool, err error) {
	atN, err := instantArg("at", at)
	if err = cmp.Or(err, store.ValidatePause(by, "")); err != nil {
		return false, err
	}
	err = s.writeTo(ctx, "resend", stream, id, func(tx *sql.Tx) error {
		next, _, oldest, err := cursorOf(ctx, tx, "resend", stream, id)
		if err != nil {
			return err
		}
		var kinds, kind string
		if err := tx.QueryRowContext(ctx, stmt("resend_kind"), stream, id, int64(seq)).Scan(&kinds, &kind); err != nil {
			return translate("resend: read the record's kind", err)
		}
		wanted, err := decodeKinds(kinds)
		if err = cmp.Or(err, store.CheckResend(stream, seq, uint64(next), uint64(oldest), wanted, kind)); err != nil {
			return err
		}
		var one int
		err = tx.QueryRowContext(ctx, stmt("resend_insert"), stream, id, int64(seq), atN, by).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // pending already
		}
		if err != nil {
			return translate("resend", err)
		}
		queued = true
		return s.registrationEvent(ctx, tx, store.KindResend, stream, id, seq, by, "", at)
	})
	return queued && err == nil, err
}

// DueResends implements store.Store in one write transaction, after a look
// from a read snapshot: most claims find none.
func (s *Store) DueResends(ctx context.Context, q store.DueQuery) (store.ResendBatch, error) {
	at, until, err := dueArgs(q)
	if err != nil {
		return store.ResendBatch{}, err
	}
	var pending bool
	if err := s.r.QueryRowContext(ctx, stmt("any_resend"), q.Namespace, at.Int64).Scan(&pending); err != nil || !pending {
		return store.ResendBatch{}, translate("due resends: look for pending ones", err)
	}
	var batch store.ResendBatch
	err = s.write(ctx, "claim pending resends of "+q.Namespace, func(tx *sql.Tx) error {
		rs, err := queryAll(ctx, tx, "due resends", nil, func(sc scanner) (store.Resend, error) {
			var (
				r     store.Resend
				seq   int64
				asked sql.NullInt64
			)
			err := sc.Scan(&r.Registration.Stream, &r.Registration.ID, &seq, &asked, &r.By)
			r.Seq, r.At, r.Owner = uint64(seq), instant(asked), q.Owner
			return r, err
		}, stmt("due_resends"), q.Namespace, at.Int64, q.Limit+1)
		if err != nil {
			return err
		}
		batch.More = len(rs) > q.Limit
		batch.Resends = rs[:min(len(rs), q.Limit)]
		for i := range batch.Resends {
			r := &batch.Resends[i]
			if _, err := tx.ExecContext(ctx, stmt("lease_resend"), q.Owner, until, r.Registration.Stream, r.Registration.ID, int64(r.Seq)); err != nil {
				return translate("due resends: claim", err)
			}
			st, err := getStatus(ctx, tx, r.Registration.Stream, r.Registration.ID)
			if err != nil {
				return err
			}
			r.Registration = st.Registration
		}
		return nil
	})
	if err != nil {
		return store.ResendBatch{}, err
	}
	s.sealer.OpenResends(batch.Resends)
	return batch, nil
}

// RenewResends implements store.Store, one statement a claim in one
// transaction.
func (s *Store) RenewResends(ctx context.Context, until time.Time, claims []store.ResendClaim) ([]store.ResendClaim, error) {
	return renewEach(ctx, s, "renew resends' leases", until, claims, func(tx *sql.Tx, when sql.NullInt64, c store.ResendClaim) (sql.Result, error) {
		return tx.ExecContext(ctx, stmt("renew_resend"), when, c.Stream, c.ID, int64(c.Seq), c.Owner)
	})
}

// Resent implements store.Store.
func (s *Store) Resent(ctx context.Context, c store.ResendClaim, ev store.Evidence) error {
	if err := cmp.Or(c.Validate(), store.ValidateInstant("evidence at", ev.At)); err != nil {
		return err
	}
	return s.writeTo(ctx, "record a resend to", c.Stream, c.ID, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, stmt("delete_resend"), c.Stream, c.ID, int64(c.Seq), c.Owner).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := getStatus(ctx, tx, c.Stream, c.ID); err != nil {
				return err
			}
			return c.LeaseLost()
		}
		if err != nil {
			return translate("record a resend", err)
		}
		ev.Event, ev.Seq = store.EventResent, c.Seq
		return addEvidence(ctx, tx, c.Stream, c.ID, ev)
	})
}
