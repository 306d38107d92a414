package postgres

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

func scanHost(row pgx.Row, extra ...any) (store.Host, error) {
	var (
		h                                store.Host
		probeAt, failureAt, failingSince pgtype.Timestamptz
	)
	err := row.Scan(append([]any{&h.Host, &h.State, &h.Since, &h.Failures, &h.Probes, &probeAt, &h.LastError, &failureAt, &failingSince}, extra...)...)
	h.Since, h.NextProbeAt, h.LastFailureAt, h.FailingSince = h.Since.UTC(), timeOf(probeAt), timeOf(failureAt), timeOf(failingSince)
	return h, err
}

// putHost sends b in tx with the write of h, and appends herald's event if
// the host's state changed.
func (s *Store) putHost(ctx context.Context, tx pgx.Tx, op string, b *pgx.Batch, old, h store.Host) error {
	b.Queue(stmt("put_host"), pgx.NamedArgs{"host": h.Host, "state": h.State, "since": h.Since, "failures": h.Failures,
		"probes": h.Probes, "next_probe_at": nullTime(h.NextProbeAt), "last_error": clean(h.LastError),
		"last_failure_at": nullTime(h.LastFailureAt), "failing_since": nullTime(h.FailingSince)})
	queueHeldTo(b, old, h)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return s.dbErr(ctx, op, err)
	}
	e, ok := store.HostEvent(old, h)
	return s.event(ctx, tx, e, ok)
}

// queueHeldTo queues the move of h's registrations' next attempts that
// store.Host.HeldTo says.
func queueHeldTo(b *pgx.Batch, old, h store.Host) {
	switch hold, from, to := h.HeldTo(old); {
	case hold:
		b.Queue(stmt("hold_host"), pgx.NamedArgs{"host": h.Host, "to": to})
	case !to.IsZero():
		b.Queue(stmt("release_host"), pgx.NamedArgs{"host": h.Host, "from": from, "to": to})
	}
}

// HostFailed implements store.HostStore in one transaction fenced by the claim.
func (s *Store) HostFailed(ctx context.Context, f store.HostFailure) (store.Host, error) {
	if err := cmp.Or(f.Validate(), checkCursor(f.NextSeq)); err != nil {
		return store.Host{}, err
	}
	c := f.Claim
	if !validKey(c.Stream, c.ID) {
		return store.Host{}, store.NotFound(c.Stream, c.ID)
	}
	f.Host = clean(f.Host)
	var h store.Host
	err := s.inTx(ctx, "record host failure", func(tx pgx.Tx) error {
		var (
			fc  fence
			old store.Host
		)
		b := &pgx.Batch{}
		fc.queue(b, c)
		b.Queue(stmt("ensure_host"), pgx.NamedArgs{"host": f.Host, "at": f.Evidence.At})
		b.Queue(stmt("lock_host"), pgx.NamedArgs{"host": f.Host}).QueryRow(func(row pgx.Row) (err error) {
			old, err = scanHost(row)
			return err
		})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "record host failure", err)
		}
		if err := fc.refusal("record host failure of", c, f.NextSeq); err != nil {
			return err
		}
		h = old.Failed(f.Evidence, f.Horizon)
		ev, failures := store.ChargeHost(c.Stream, c.ID, f.Evidence, f.NextSeq, fc.reg.NextSeq, fc.reg.HostFailures)
		ev.Stream, ev.Registration = c.Stream, c.ID
		b = &pgx.Batch{}
		named := evidenceArgs(ev)
		named["owner"], named["next_seq"], named["not_before"], named["host_failures"] = c.Owner, int64(f.NextSeq), ev.NotBefore, failures
		b.Queue(stmt("host_failed"), named)
		queueTrim(b, c.Stream, c.ID)
		return s.putHost(ctx, tx, "record host failure", b, old, h)
	})
	if err != nil {
		return store.Host{}, err
	}
	return h, nil
}

// HostAnswered implements store.HostStore.
func (s *Store) HostAnswered(ctx context.Context, host string, at time.Time) (store.Host, error) {
	return s.answered(ctx, host, at, false)
}

// ResetHost implements store.HostStore.
func (s *Store) ResetHost(ctx context.Context, host string, at time.Time) (store.Host, error) {
	return s.answered(ctx, host, at, true)
}

func (s *Store) answered(ctx context.Context, host string, at time.Time, mustExist bool) (store.Host, error) {
	if err := errors.Join(store.ValidateHost(host), store.ValidateInstant("at", at)); err != nil {
		return store.Host{}, err
	}
	if !validText(host) { // PostgreSQL's text cannot hold it: no such host is stored
		return store.Answer(host, store.Host{}, false, mustExist, at)
	}
	var h store.Host
	err := s.inTx(ctx, "record an answer", func(tx pgx.Tx) error {
		old, err := scanHost(tx.QueryRow(ctx, stmt("lock_host"), pgx.NamedArgs{"host": host}))
		found := !errors.Is(err, pgx.ErrNoRows)
		if err != nil && found {
			return s.dbErr(ctx, "read host", err)
		}
		if h, err = store.Answer(host, old, found, mustExist, at); err != nil || !found || h == old {
			return err // nothing to write: unknown, or already as the answer leaves it
		}
		return s.putHost(ctx, tx, "write host", &pgx.Batch{}, old, h)
	})
	if err != nil {
		return store.Host{}, err
	}
	return h, nil
}

// Hosts implements store.HostStore.
func (s *Store) Hosts(ctx context.Context, q store.HostQuery) ([]store.Host, error) {
	limit, err := q.Validate()
	if err != nil {
		return nil, err
	}
	if !validText(q.Host) || !validText(q.After) {
		return nil, journal.Invalid("host", "is not valid UTF-8 text")
	}
	return query(ctx, s, "list hosts", nil, func(row pgx.CollectableRow) (store.Host, error) {
		var (
			held     int64
			scheme   string
			schemeAt pgtype.Timestamptz
		)
		h, err := scanHost(row, &held, &scheme, &schemeAt)
		h.Held, h.Scheme, h.SchemeAt = int(held), scheme, timeOf(schemeAt)
		return h, err
	}, stmt("hosts"), pgx.NamedArgs{"host": q.Host, "state": q.State, "after": q.After, "limit": limit})
}

// HostScheme implements store.HostSchemes.
func (s *Store) HostScheme(ctx context.Context, host string) (string, time.Time, error) {
	if err := store.ValidateHost(host); err != nil {
		return "", time.Time{}, err
	}
	if !validText(host) {
		return "", time.Time{}, nil // PostgreSQL's text cannot hold it: no such host is stored
	}
	var scheme string
	var at *time.Time
	err := s.pool.QueryRow(ctx, stmt("host_scheme"), pgx.NamedArgs{"host": host}).Scan(&scheme, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, s.dbErr(ctx, "read the signature scheme of a host", err)
	}
	if at == nil {
		return scheme, time.Time{}, nil
	}
	return scheme, at.UTC(), nil
}

// SetHostScheme implements store.HostSchemes.
func (s *Store) SetHostScheme(ctx context.Context, host, scheme string, at time.Time) error {
	if err := store.CheckHostScheme(host, scheme, at); err != nil {
		return err
	}
	if !validText(host) {
		return journal.Invalid("host", "holds a character PostgreSQL's text cannot (NUL or invalid UTF-8)")
	}
	if _, err := s.pool.Exec(ctx, stmt("set_host_scheme"), pgx.NamedArgs{"host": host, "scheme": scheme, "at": at}); err != nil {
		return s.dbErr(ctx, "store the signature scheme of a host", err)
	}
	return nil
}
