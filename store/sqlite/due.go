package sqlite

import (
	"context"
	"database/sql"

	"github.com/heraldpush/herald/push"
)

// Due implements push.Store. In one write transaction it finds up to
// q.Limit+1 due registrations of q.Namespace (oldest NextAttemptAt first),
// counts other namespaces' due ones, stamps the lease on the first q.Limit,
// and recomputes the wake marker of every stream it looked at. The write lock
// makes the claim atomic: no other caller, in this process or another, can
// claim the same rows before the lease is stored.
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
	var batch push.DueBatch
	// Most sweeps of a quiet store find nothing: say so from a read
	// snapshot, without taking the write lock (or syncing a commit). An
	// append that commits after this read is one that came after the sweep.
	var woken bool
	if err := s.r.QueryRowContext(ctx, sqlAnyWoken, at.Int64).Scan(&woken); err != nil {
		return push.DueBatch{}, translate("due: look for woken streams", err)
	}
	if !woken {
		return batch, nil
	}
	err = s.write(ctx, "claim due registrations of "+q.Namespace, func(tx *sql.Tx) error {
		probes, troubled, err := heldHosts(ctx, tx, at.Int64)
		if err != nil {
			return err
		}
		found, more, err := dueRows(ctx, tx, q, at.Int64, probes)
		if err != nil {
			return err
		}
		batch.More = more
		reported := map[string]bool{}
		for _, st := range found {
			host := st.Host()
			if h, ok := probes[host]; ok && !reported[host] {
				// This claim is the host's probe: move its next one, in
				// this transaction, so that no other claim probes it too.
				h = h.Probed(q.At)
				if err := putHost(ctx, tx, h); err != nil {
					return err
				}
				troubled[host] = h
			}
			if h, ok := troubled[host]; ok && !reported[host] {
				reported[host] = true
				batch.Hosts = append(batch.Hosts, h)
			}
		}
		err = tx.QueryRowContext(ctx, sqlUnserved, at.Int64, q.Namespace).Scan(&batch.Unserved)
		if err != nil {
			return translate("due: count other namespaces", err)
		}
		if len(found) > 0 {
			// next_attempt_at = at: the least recently claimed go first
			// next time, so a saturated namespace starves no one.
			claim, err := tx.PrepareContext(ctx, sqlClaim)
			if err != nil {
				return translate("due: prepare claim", err)
			}
			defer claim.Close()
			for i := range found {
				st := &found[i]
				if _, err := claim.ExecContext(ctx, q.Owner, until, at, st.Stream, st.ID); err != nil {
					return translate("due: claim", err)
				}
				st.LeaseOwner, st.LeaseUntil, st.NextAttemptAt = q.Owner, instant(until), instant(at)
			}
		}
		batch.Registrations = found
		// Every stream woken by now was read above; set its marker to the
		// earliest instant one of its lagging, unparked registrations is due
		// (a claimed one at its lease's end, a held one at its host's next
		// probe), or NULL when none lags. This runs under the write lock
		// that every append and cursor move takes, so no append can commit
		// between reading the heads and writing the markers: no wake-up is
		// lost. (An answer that releases a host wakes its streams: hosts.go.)
		_, err = tx.ExecContext(ctx, sqlRecomputeWake, at.Int64, int64(dueNow))
		return translate("due: recompute wake markers", err)
	})
	if err != nil {
		return push.DueBatch{}, err
	}
	return batch, nil
}

// dueRows returns the first q.Limit due registrations of q.Namespace, oldest
// NextAttemptAt first, within the per-host cap, and whether one more exists.
// Without a cap, SQL stops at Limit+1; with one, rows are read in order until
// Limit+1 have room (a host over its cap is skipped, and costs one row each).
//
// A host in probes (not up, its probe due) gets one claim, its probe; its
// other rows are skipped as the cap skips them.
func dueRows(ctx context.Context, tx *sql.Tx, q push.DueQuery, at int64, probes map[string]push.Host) ([]push.Status, bool, error) {
	limit := q.Limit + 1
	if q.MaxPerHost > 0 || len(probes) > 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := tx.QueryContext(ctx, sqlDue, at, q.Namespace, limit)
	if err != nil {
		return nil, false, translate("due", err)
	}
	defer rows.Close()
	var found []push.Status
	taken := map[string]int{}
	for rows.Next() {
		st, err := scanStatus(rows)
		if err != nil {
			return nil, false, translate("due", err)
		}
		h := st.Host()
		if room := q.HostRoom(h); room >= 0 && taken[h] >= room {
			continue
		}
		if _, probe := probes[h]; probe && taken[h] > 0 {
			continue // held: one probe only
		}
		if len(found) == q.Limit {
			return found, true, nil
		}
		taken[h]++
		found = append(found, st)
	}
	if err := rows.Err(); err != nil {
		return nil, false, translate("due", err)
	}
	return found, false, nil
}
