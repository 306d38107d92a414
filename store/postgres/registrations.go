package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// Register implements push.Store. It locks the stream row (creating it for
// a stream with no records yet) and sets its pending marker, then inserts or
// updates the registration, in one transaction.
func (s *Store) Register(ctx context.Context, r push.Registration) (push.Registration, error) {
	if err := r.Validate(); err != nil {
		return push.Registration{}, err
	}
	next := max(r.NextSeq, 1)
	if err := checkSeq("next seq", next); err != nil {
		return push.Registration{}, err
	}
	var out push.Registration
	err := s.inTx(ctx, "register", func(tx pgx.Tx) error {
		var (
			head, oldest int64
			finalSeq     *int64
			exists       bool
		)
		b := &pgx.Batch{}
		b.Queue(sqlEnsureStream, r.Stream)
		b.Queue(sqlMarkStream, r.Stream).QueryRow(func(row pgx.Row) error { return row.Scan(&head, &finalSeq, &oldest) })
		b.Queue(sqlRegistrationExists, r.Stream, r.ID).QueryRow(func(row pgx.Row) error { return row.Scan(&exists) })
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "register", err)
		}
		if !exists && r.NextSeq == 0 {
			next = uint64(oldest) // from the oldest retained record
		}
		if !exists {
			if err := store.CheckRetained(r.Stream, next, uint64(oldest)); err != nil {
				return err
			}
		}
		if !exists && finalSeq != nil && next > uint64(head) {
			return fmt.Errorf("register %s at #%d: %w", push.Name(r.Stream, r.ID), next,
				&journal.SealedError{Stream: r.Stream, FinalSeq: uint64(*finalSeq)})
		}
		if !exists {
			if err := store.ValidateCursor(next, uint64(head)); err != nil {
				return err // a cursor past head+1 would skip records appended later, unseen
			}
		}
		var config []byte
		if len(r.Config) > 0 {
			config = r.Config
		}
		row := tx.QueryRow(ctx, sqlUpsertRegistration, r.Stream, r.ID, r.Namespace, r.URL, config,
			string(r.OnRejected), int64(next), time.Time{}, r.Host(), kindsArg(r.Kinds), int32(max(r.Window, 1)))
		st, err := scanStatus(row, false)
		if err != nil {
			return s.dbErr(ctx, "register", err)
		}
		out = st.Registration
		return nil
	})
	if err != nil {
		return push.Registration{}, err
	}
	return out, nil
}

// Unregister implements push.Store. Evidence goes with the registration
// (ON DELETE CASCADE).
func (s *Store) Unregister(ctx context.Context, stream, id string) error {
	if !validKey(stream, id) {
		return notFound(stream, id)
	}
	tag, err := s.pool.Exec(ctx, sqlDeleteRegistration, stream, id)
	if err != nil {
		return s.dbErr(ctx, "unregister", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound(stream, id)
	}
	return nil
}

// Get implements push.Store.
func (s *Store) Get(ctx context.Context, stream, id string) (push.Status, error) {
	if !validKey(stream, id) {
		return push.Status{}, notFound(stream, id)
	}
	st, err := scanStatus(s.pool.QueryRow(ctx, sqlGet, stream, id), true)
	if errors.Is(err, pgx.ErrNoRows) {
		return push.Status{}, notFound(stream, id)
	}
	if err != nil {
		return push.Status{}, s.dbErr(ctx, "get registration", err)
	}
	return st, nil
}

// List implements push.Store.
func (s *Store) List(ctx context.Context, q push.ListQuery) ([]push.Status, error) {
	limit, err := push.ListLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	if !validText(q.Stream) || !validText(q.Namespace) {
		return nil, nil // names nothing PostgreSQL could store
	}
	if !validKey(q.After.Stream, q.After.ID) {
		return nil, journal.Invalid("after", "is not valid UTF-8 or holds a NUL byte")
	}
	rows, err := s.pool.Query(ctx, sqlList, q.Stream, q.Namespace, q.Parked, q.Lagging, q.After.Stream, q.After.ID, limit)
	if err != nil {
		return nil, s.dbErr(ctx, "list registrations", err)
	}
	out, err := collectStatuses(rows)
	if err != nil {
		return nil, s.dbErr(ctx, "list registrations", err)
	}
	return out, nil
}

// Stats implements push.Store with SQL aggregates: no registration is
// loaded but the ten most lagging and the oldest parked.
func (s *Store) Stats(ctx context.Context, at time.Time) (push.Stats, error) {
	st := push.Stats{Namespaces: map[string]push.NamespaceStats{}}
	b := &pgx.Batch{}
	b.Queue(sqlStatsNamespaces, at).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var ns string
			var n push.NamespaceStats
			var behind int64
			if err := rows.Scan(&ns, &n.Ready, &n.Retrying, &n.Idle, &n.Parked, &n.Leased, &behind); err != nil {
				return err
			}
			n.Behind = uint64(behind)
			st.Namespaces[ns] = n
		}
		return rows.Err()
	})
	b.Queue(sqlStatsLagging, push.MaxLagging).Query(func(rows pgx.Rows) (err error) {
		st.Lagging, err = collectStatuses(rows)
		return err
	})
	b.Queue(sqlStatsOldestParked).Query(func(rows pgx.Rows) error {
		parked, err := collectStatuses(rows)
		if len(parked) > 0 {
			st.OldestParked = &parked[0]
		}
		return err
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return push.Stats{}, s.dbErr(ctx, "stats", err)
	}
	return st, nil
}

func collectStatuses(rows pgx.Rows) ([]push.Status, error) {
	defer rows.Close()
	var out []push.Status
	for rows.Next() {
		st, err := scanStatus(rows, true)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// scanStatus reads regColumns, statusColumns' head and sealed flag when
// withHead, then extra.
func scanStatus(row pgx.Row, withHead bool, extra ...any) (push.Status, error) {
	var (
		st                   push.Status
		r                    = &st.Registration
		config               []byte
		onRejected           string
		next, head           int64
		parkedAt, leaseUntil pgtype.Timestamptz
	)
	dest := []any{&r.Stream, &r.ID, &r.Namespace, &r.URL, &config, &onRejected, &next, &r.Attempts,
		&r.NextAttemptAt, &r.Parked, &parkedAt, &r.LastError, &r.LeaseOwner, &leaseUntil, &r.HostFailures, &r.Kinds, &r.Window}
	if withHead {
		dest = append(dest, &head, &st.Sealed)
	}
	dest = append(dest, extra...)
	if err := row.Scan(dest...); err != nil {
		return push.Status{}, err
	}
	if config != nil {
		r.Config = push.Config(config)
	}
	r.OnRejected = push.RejectPolicy(onRejected)
	if len(r.Kinds) == 0 {
		r.Kinds = nil // every kind, as the other stores return it
	}
	r.NextSeq, st.Head = uint64(next), uint64(head)
	r.NextAttemptAt = r.NextAttemptAt.UTC()
	r.ParkedAt, r.LeaseUntil = timeOf(parkedAt), timeOf(leaseUntil)
	return st, nil
}

// kindsArg stores nil kind patterns (every kind) as the empty array.
func kindsArg(kinds []string) []string {
	if kinds == nil {
		return []string{}
	}
	return kinds
}

func timeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

// validKey reports whether stream and id could name a stored registration:
// PostgreSQL's text holds neither invalid UTF-8 nor NUL, so a key with them
// names nothing (and must not reach the server, which would refuse it).
func validKey(stream, id string) bool { return validText(stream) && validText(id) }

func validText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return false
		}
	}
	return true
}
