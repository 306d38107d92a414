package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

var _ push.HostStore = (*Store)(nil)

// Host health lives in herald_host (migrations/001_init.up.sql). The
// rules are push's (Host.Failed, Answered, Probed); this file keeps their
// results. Due holds
// the registrations of a host that is not up (due.go), and the wake marker
// of a stream whose only lagging registrations are held is the host's next
// probe instant, so a down host costs no write per sweep.

func scanHost(sc interface{ Scan(...any) error }) (push.Host, error) {
	var (
		h                         push.Host
		since, probeAt, failureAt sql.NullInt64
	)
	if err := sc.Scan(&h.Host, &h.State, &since, &h.Failures, &h.Probes, &probeAt, &h.LastError, &failureAt); err != nil {
		return push.Host{}, err
	}
	h.Since, h.NextProbeAt, h.LastFailureAt = instant(since), instant(probeAt), instant(failureAt)
	return h, nil
}

// getHost reads one host; found is false when none is stored.
func getHost(ctx context.Context, q queryer, host string) (h push.Host, found bool, err error) {
	h, err = scanHost(q.QueryRowContext(ctx, sqlGetHost, host))
	if errors.Is(err, sql.ErrNoRows) {
		return push.Host{Host: host}, false, nil
	}
	if err != nil {
		return push.Host{}, false, translate("read host", err)
	}
	return h, true, nil
}

func putHost(ctx context.Context, tx *sql.Tx, h push.Host) error {
	var args []any
	for _, t := range []struct {
		field string
		t     time.Time
	}{{"host since", h.Since}, {"next probe at", h.NextProbeAt}, {"last failure at", h.LastFailureAt}} {
		n, err := nanos(t.field, t.t)
		if err != nil {
			return err
		}
		args = append(args, n)
	}
	_, err := tx.ExecContext(ctx, sqlPutHost, h.Host, h.State, args[0], h.Failures, h.Probes, args[1], h.LastError, args[2])
	return translate("write host", err)
}

// HostFailed implements push.HostStore: the registration's write, its
// evidence and the host's health in one write transaction, fenced by the
// claim.
func (s *Store) HostFailed(ctx context.Context, f push.HostFailure) (push.Host, error) {
	if err := f.Validate(); err != nil {
		return push.Host{}, err
	}
	n, err := seqArg("next seq", f.NextSeq)
	if err != nil {
		return push.Host{}, err
	}
	var h push.Host
	err = s.write(ctx, "record host failure of "+f.Host, func(tx *sql.Tx) error {
		if err := fence(ctx, tx, f.Claim, f.NextSeq); err != nil {
			return err
		}
		old, _, err := getHost(ctx, tx, f.Host)
		if err != nil {
			return err
		}
		h = old.Failed(f.Evidence.At, f.Evidence.Error, f.Policy)
		if err := putHost(ctx, tx, h); err != nil {
			return err
		}
		if e, ok := push.HostEvent(old, h); ok {
			if err := s.appendEvent(ctx, tx, e); err != nil {
				return err
			}
		}
		var cursor int64
		var failures int
		if err := tx.QueryRowContext(ctx, sqlHostCursor, f.Claim.Stream, f.Claim.ID).Scan(&cursor, &failures); err != nil {
			return translate("record host failure", err)
		}
		if n > cursor {
			failures = 0
		}
		failures++
		ev := f.Evidence
		ev.Event, ev.Attempt, ev.NotBefore = push.EventHostFailed, 0, push.HostRetryAt(f.Claim.Stream, f.Claim.ID, failures, ev.At)
		nb, err := nanos("not before", ev.NotBefore)
		if err != nil {
			return err
		}
		st, err := scanState(tx.QueryRowContext(ctx, sqlHostFailed, n, nb, ev.Clean().Error, f.Claim.Stream, f.Claim.ID, f.Claim.Owner, failures),
			f.Claim.Stream, f.Claim.ID, "record host failure")
		if err != nil {
			return err
		}
		if err := addEvidence(ctx, tx, f.Claim.Stream, f.Claim.ID, ev); err != nil {
			return err
		}
		return rewake(ctx, tx, f.Claim.Stream, st)
	})
	if err != nil {
		return push.Host{}, err
	}
	return h, nil
}

// HostAnswered implements push.HostStore.
func (s *Store) HostAnswered(ctx context.Context, host string, at time.Time) (push.Host, error) {
	return s.answered(ctx, host, at, false)
}

// ResetHost implements push.HostStore.
func (s *Store) ResetHost(ctx context.Context, host string, at time.Time) (push.Host, error) {
	return s.answered(ctx, host, at, true)
}

func (s *Store) answered(ctx context.Context, host string, at time.Time, mustExist bool) (push.Host, error) {
	if err := errors.Join(push.ValidateHost(host), push.ValidateInstant("at", at)); err != nil {
		return push.Host{}, err
	}
	if _, err := nanos("at", at); err != nil {
		return push.Host{}, err
	}
	var h push.Host
	err := s.write(ctx, "record an answer of "+host, func(tx *sql.Tx) error {
		old, found, err := getHost(ctx, tx, host)
		if err != nil {
			return err
		}
		if !found {
			if mustExist {
				return fmt.Errorf("host %q: %w", host, journal.ErrNotFound)
			}
			h = push.Host{Host: host, State: push.HostUp, Since: at}
			return nil
		}
		h = old.Answered(at)
		if h == old {
			return nil
		}
		if err := putHost(ctx, tx, h); err != nil {
			return err
		}
		if e, ok := push.HostEvent(old, h); ok {
			if err := s.appendEvent(ctx, tx, e); err != nil {
				return err
			}
		}
		if old.State == push.HostUp {
			return nil
		}
		// Released: wake every stream the host's registrations follow, so
		// that the next Due reads them (it recomputes the markers).
		_, err = tx.ExecContext(ctx, sqlWakeHostStreams, int64(dueNow), host)
		return translate("wake the host's streams", err)
	})
	if err != nil {
		return push.Host{}, err
	}
	return h, nil
}

// Hosts implements push.HostStore.
func (s *Store) Hosts(ctx context.Context, q push.HostQuery) ([]push.Host, error) {
	limit, err := q.Validate()
	if err != nil {
		return nil, err
	}
	var out []push.Host
	err = s.read(ctx, "list hosts", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, sqlHosts, q.Host, q.State, q.After, limit)
		if err != nil {
			return translate("list hosts", err)
		}
		defer rows.Close()
		for rows.Next() {
			h, err := scanHost(rows)
			if err != nil {
				return translate("list hosts", err)
			}
			out = append(out, h)
		}
		if err := rows.Err(); err != nil {
			return translate("list hosts", err)
		}
		if len(out) == 0 {
			return nil
		}
		held := map[string]int{}
		rows, err = tx.QueryContext(ctx, sqlHeld)
		if err != nil {
			return translate("count held registrations", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				host string
				n    int
			)
			if err := rows.Scan(&host, &n); err != nil {
				return translate("count held registrations", err)
			}
			held[host] = n
		}
		if err := rows.Err(); err != nil {
			return translate("count held registrations", err)
		}
		for i := range out {
			out[i].Held = held[out[i].Host]
		}
		return nil
	})
	return out, err
}

// heldHosts reads, inside Due's transaction, the hosts not up whose probe
// is due at at (their next probe goes through this claim), and the
// troubled hosts (push.Host.Troubled), which Due reports for those it
// claims.
func heldHosts(ctx context.Context, tx *sql.Tx, at int64) (probes, troubled map[string]push.Host, err error) {
	rows, err := tx.QueryContext(ctx, sqlTroubledHosts)
	if err != nil {
		return nil, nil, translate("due: read hosts", err)
	}
	defer rows.Close()
	probes, troubled = map[string]push.Host{}, map[string]push.Host{}
	for rows.Next() {
		h, err := scanHost(rows)
		if err != nil {
			return nil, nil, translate("due: read hosts", err)
		}
		troubled[h.Host] = h
		if held, probe := h.Holds(instant(sql.NullInt64{Int64: at, Valid: true})); held && probe {
			probes[h.Host] = h
		}
	}
	return probes, troubled, translate("due: read hosts", rows.Err())
}
