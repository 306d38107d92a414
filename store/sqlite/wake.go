package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/heraldpush/herald/store"
)

// wakeMarker returns the wake marker of stream w after a claim of namespace
// at instant at that took every due registration of the namespace it could
// (none left by the cap): the earliest instant one of its lagging, unparked
// registrations may be due, or NULL when none lags. Such a registration is
// now, by its row alone,
//
//   - waiting for a retry (next_attempt_at after at): due at it at the
//     earliest. Per cursor and namespace, the earliest is one probe of
//     herald_registration_due (statement namespace_at).
//   - tried at or before at, or never (a claimed one's next_attempt_at is
//     its claim's instant), and then leased, held, or due. A lease ends at
//     its lease_until: the stream's earliest is one probe of
//     herald_registration_leased (statement lease_end). A registration held by a
//     host that is down is due at the host's next probe: held lists those
//     hosts, earliest probe first, and the first that has registrations on
//     the stream (herald_registration_host) gives the bound. A due one is
//     another namespace's (this one's were claimed): the first of each
//     such cursor is looked up (statement due_of_cursor), and one makes the marker
//     dueNow.
//
// The marker is the earliest of these bounds, so never later than when a
// registration is due; it may be earlier (a lease renewed, a held host's
// registrations at the head), which costs one claim that finds nothing
// there. It reads no registration that waits, only one row per cursor and
// namespace, per stream and per held host, but for another namespace's
// leased and held registrations before its first due one (as its own
// claims read them).
func wakeMarker(ctx context.Context, q queryer, w wokenStream, namespace string, held []store.Host, at int64) (sql.NullInt64, error) {
	var m sql.NullInt64
	lower := func(n sql.NullInt64) {
		if n.Valid && (!m.Valid || n.Int64 < m.Int64) {
			m = n
		}
	}
	tried := false // some registration was tried at or before at, or never
	for _, cursor := range w.cursors {
		for ns := ""; ; {
			var (
				retry sql.NullInt64
				first bool
			)
			err := q.QueryRowContext(ctx, stmt("namespace_at"), w.stream, cursor, ns, at).Scan(&ns, &retry, &first)
			if errors.Is(err, sql.ErrNoRows) {
				break
			}
			if err != nil {
				return m, translate("due: wake marker", err)
			}
			lower(retry)
			tried = tried || first
			if !first || ns == namespace {
				continue
			}
			var (
				id, host string
				next     sql.NullInt64
			)
			err = q.QueryRowContext(ctx, stmt("due_of_cursor"), w.stream, ns, at, cursor, 1, "[]").Scan(&id, &host, &next)
			switch {
			case err == nil:
				return sql.NullInt64{Int64: dueNow, Valid: true}, nil
			case !errors.Is(err, sql.ErrNoRows):
				return m, translate("due: wake marker: due of "+ns, err)
			}
		}
	}
	if !tried {
		return m, nil
	}
	var lease sql.NullInt64
	if err := q.QueryRowContext(ctx, stmt("lease_end"), w.stream, at).Scan(&lease); err != nil {
		return m, translate("due: wake marker: leases", err)
	}
	lower(lease)
	for _, h := range held {
		probe := h.NextProbeAt.UnixNano()
		if m.Valid && probe >= m.Int64 {
			break
		}
		var follows bool
		if err := q.QueryRowContext(ctx, stmt("host_follows"), h.Host, w.stream).Scan(&follows); err != nil {
			return m, translate("due: wake marker: held host", err)
		}
		if follows {
			lower(sql.NullInt64{Int64: probe, Valid: true})
			break
		}
	}
	if !m.Valid {
		// None of the bounds covers a registration that was tried: it is due.
		return sql.NullInt64{Int64: dueNow, Valid: true}, nil
	}
	return m, nil
}

// heldHosts returns the hosts that hold their registrations at at, until a
// probe after it, earliest probe first.
func heldHosts(hosts map[string]store.Host, at time.Time) []store.Host {
	var out []store.Host
	for _, h := range hosts {
		if held, probe := h.Holds(at); held && !probe {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b store.Host) int {
		return cmp.Or(a.NextProbeAt.Compare(b.NextProbeAt), cmp.Compare(a.Host, b.Host))
	})
	return out
}
