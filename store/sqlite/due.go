package sqlite

import (
	"context"
	"database/sql"

	"github.com/heraldpush/herald/push"
)

// dueFrom joins each woken stream to its registrations. CROSS JOIN is
// SQLite's way to fix the join order whatever the statistics say: streams
// first, through the partial index herald_stream_wake, so that idle streams
// and their registrations are never read.
const dueFrom = ` FROM herald_stream AS s CROSS JOIN herald_registration AS r ON r.stream = s.stream `

// dueWhere selects due registrations (alias r) on woken streams (alias s) at
// instant ?1.
const dueWhere = ` WHERE s.wake_at <= ?1
	AND r.parked = 0
	AND r.next_seq <= s.head
	AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?1)
	AND (r.lease_until IS NULL OR r.lease_until <= ?1) `

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
	if err := s.r.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM herald_stream WHERE wake_at <= ?)", at.Int64).Scan(&woken); err != nil {
		return push.DueBatch{}, translate("due: look for woken streams", err)
	}
	if !woken {
		return batch, nil
	}
	err = s.write(ctx, "claim due registrations of "+q.Namespace, func(tx *sql.Tx) error {
		found, more, err := dueRows(ctx, tx, q, at.Int64)
		if err != nil {
			return err
		}
		batch.More = more
		err = tx.QueryRowContext(ctx, "SELECT COUNT(*)"+dueFrom+dueWhere+"AND r.namespace <> ?2", at.Int64, q.Namespace).Scan(&batch.Unserved)
		if err != nil {
			return translate("due: count other namespaces", err)
		}
		if len(found) > 0 {
			// next_attempt_at = at: the least recently claimed go first
			// next time, so a saturated namespace starves no one.
			claim, err := tx.PrepareContext(ctx, "UPDATE herald_registration SET lease_owner = ?, lease_until = ?, next_attempt_at = ? WHERE stream = ? AND id = ?")
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
		// (a claimed one at its lease's end), or NULL when none lags. This
		// runs under the write lock that every append and cursor move takes,
		// so no append can commit between reading the heads and writing the
		// markers: no wake-up is lost.
		_, err = tx.ExecContext(ctx, `UPDATE herald_stream SET wake_at = (
				SELECT MIN(MAX(IFNULL(r.next_attempt_at, ?2), IFNULL(r.lease_until, ?2)))
				FROM herald_registration AS r
				WHERE r.stream = herald_stream.stream AND r.parked = 0 AND r.next_seq <= herald_stream.head)
			WHERE wake_at <= ?1`, at.Int64, int64(dueNow))
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
func dueRows(ctx context.Context, tx *sql.Tx, q push.DueQuery, at int64) ([]push.Status, bool, error) {
	limit := q.Limit + 1
	if q.MaxPerHost > 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := tx.QueryContext(ctx, "SELECT "+statusColumns+dueFrom+dueWhere+
		"AND r.namespace = ?2 ORDER BY r.next_attempt_at, r.stream, r.id LIMIT ?3", at, q.Namespace, limit)
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
