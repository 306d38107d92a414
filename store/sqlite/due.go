package sqlite

import (
	"context"
	"database/sql"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// Due implements push.Store in one write transaction, whose lock makes the
// claim atomic across processes: store.DuePicker picks what it claims, and
// the wake marker of every stream it read is recomputed.
func (s *Store) Due(ctx context.Context, q push.DueQuery) (push.DueBatch, error) {
	if err := q.Validate(); err != nil {
		return push.DueBatch{}, err
	}
	at, err := nanos("at", q.At)
	if err != nil {
		return push.DueBatch{}, err
	}
	until, err := nanos("lease until", q.LeaseUntil)
	if err != nil {
		return push.DueBatch{}, err
	}
	// Most sweeps of a quiet store find nothing: say so from a read
	// snapshot, without taking the write lock (or syncing a commit). An
	// append that commits after this read is one that came after the sweep.
	var woken bool
	if err := s.r.QueryRowContext(ctx, sqlAnyWoken, at.Int64).Scan(&woken); err != nil || !woken {
		return push.DueBatch{}, translate("due: look for woken streams", err)
	}
	var p *store.DuePicker
	err = s.write(ctx, "claim due registrations of "+q.Namespace, func(tx *sql.Tx) error {
		hosts := map[string]push.Host{}
		probing := false
		_, err := queryAll(ctx, tx, "due: read hosts", nil, func(sc scanner) (h push.Host, err error) {
			h, err = scanHost(sc)
			hosts[h.Host] = h
			_, probe := h.Holds(q.At)
			probing = probing || probe
			return h, err
		}, sqlTroubledHosts)
		if err != nil {
			return err
		}
		// Without a cap or a probe, SQL stops at Limit+1 rows; else the
		// picker reads on until it has Limit+1 that fit.
		limit := q.Limit + 1
		if q.MaxPerHost > 0 || probing {
			limit = -1
		}
		p = store.NewDuePicker(q, hosts)
		rows, err := tx.QueryContext(ctx, sqlDue, at.Int64, q.Namespace, limit)
		if err != nil {
			return translate("due", err)
		}
		defer rows.Close()
		for rows.Next() {
			st, err := scanStatus(rows)
			if err != nil {
				return translate("due", err)
			}
			if !p.Offer(st) {
				break
			}
		}
		if err := rows.Err(); err != nil {
			return translate("due", err)
		}
		for _, h := range p.Probed {
			if err := s.putHost(ctx, tx, h, h); err != nil {
				return err
			}
		}
		if err := tx.QueryRowContext(ctx, sqlUnserved, at.Int64, q.Namespace).Scan(&p.Batch.Unserved); err != nil {
			return translate("due: count other namespaces", err)
		}
		for i := range p.Batch.Registrations {
			st := &p.Batch.Registrations[i]
			if _, err := tx.ExecContext(ctx, sqlClaim, q.Owner, until, at, st.Stream, st.ID); err != nil {
				return translate("due: claim", err)
			}
			st.LeaseOwner, st.LeaseUntil, st.NextAttemptAt = q.Owner, instant(until), instant(at)
		}
		// Every stream woken by now was read above: its marker becomes the
		// earliest instant one of its lagging, unparked registrations is due
		// (a claimed one at its lease's end, a held one at its host's next
		// probe), or NULL (package doc, "Idle costs nothing").
		_, err = tx.ExecContext(ctx, sqlRecomputeWake, at.Int64, int64(dueNow))
		return translate("due: recompute wake markers", err)
	})
	if err != nil {
		return push.DueBatch{}, err
	}
	return p.Batch, nil
}
