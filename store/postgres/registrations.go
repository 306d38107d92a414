package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// Register implements push.Store: it locks and marks the stream row, then
// writes the registration.
func (s *Store) Register(ctx context.Context, r push.Registration) (push.Registration, error) {
	if err := r.Validate(); err != nil {
		return push.Registration{}, err
	}
	if err := checkSeq("next seq", r.NextSeq); err != nil {
		return push.Registration{}, err
	}
	var out push.Registration
	err := s.inTx(ctx, "register", func(tx pgx.Tx) error {
		var (
			head, oldest   uint64
			sealed, exists bool
		)
		b := &pgx.Batch{}
		b.Queue(sqlMarkStream, r.Stream).QueryRow(func(row pgx.Row) error { return row.Scan(&head, &sealed, &oldest) })
		b.Queue(sqlRegistrationExists, r.Stream, r.ID).QueryRow(func(row pgx.Row) error { return row.Scan(&exists) })
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "register", err)
		}
		next := max(r.NextSeq, 1) // an update keeps the stored cursor
		if !exists {
			var err error
			if next, err = store.FirstCursor(r, head, oldest, sealed); err != nil {
				return err
			}
		}
		var config []byte // NULL for none
		if len(r.Config) > 0 {
			config = r.Config
		}
		kinds := r.Kinds // the empty array for every kind
		if kinds == nil {
			kinds = []string{}
		}
		st, err := scanStatus(tx.QueryRow(ctx, sqlUpsertRegistration, r.Stream, r.ID, r.Namespace, r.URL, config,
			string(r.OnRejected), int64(next), time.Time{}, r.Host(), kinds, int32(max(r.Window, 1))))
		out = st.Registration
		return s.dbErr(ctx, "register", err)
	})
	if err != nil {
		return push.Registration{}, err
	}
	return out, nil
}

// Unregister implements push.Store; the evidence goes too.
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
	st, err := scanStatus(s.pool.QueryRow(ctx, sqlGet, stream, id))
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
	return query(ctx, s, "list registrations", nil, rowTo(scanStatus),
		sqlList, q.Stream, q.Namespace, q.Parked, q.Lagging, q.After.Stream, q.After.ID, limit)
}

// Stats implements push.Store with SQL aggregates.
func (s *Store) Stats(ctx context.Context, at time.Time) (push.Stats, error) {
	st := push.Stats{Namespaces: map[string]push.NamespaceStats{}}
	var parked []push.Status
	b := &pgx.Batch{}
	b.Queue(sqlStatsNamespaces, at).Query(func(rows pgx.Rows) error {
		var (
			ns string
			n  push.NamespaceStats
		)
		_, err := pgx.ForEachRow(rows, []any{&ns, &n.Ready, &n.Retrying, &n.Idle, &n.Parked, &n.Leased, &n.Behind}, func() error {
			st.Namespaces[ns] = n
			return nil
		})
		return err
	})
	b.Queue(sqlStatsLagging, push.MaxLagging).Query(appendTo(&st.Lagging, rowTo(scanStatus)))
	b.Queue(sqlStatsOldestParked).Query(appendTo(&parked, rowTo(scanStatus)))
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return push.Stats{}, s.dbErr(ctx, "stats", err)
	}
	if len(parked) > 0 {
		st.OldestParked = &parked[0]
	}
	return st, nil
}

// scanStatus reads statusColumns, then extra.
func scanStatus(row pgx.Row, extra ...any) (push.Status, error) {
	var (
		st                   push.Status
		r                    = &st.Registration
		config               []byte
		onRejected           string
		parkedAt, leaseUntil pgtype.Timestamptz
	)
	err := row.Scan(append([]any{&r.Stream, &r.ID, &r.Namespace, &r.URL, &config, &onRejected, &r.NextSeq, &r.Attempts,
		&r.NextAttemptAt, &r.Parked, &parkedAt, &r.LastError, &r.LeaseOwner, &leaseUntil, &r.HostFailures, &r.Kinds, &r.Window,
		&st.Head, &st.Sealed}, extra...)...)
	if config != nil {
		r.Config = push.Config(config)
	}
	r.OnRejected = push.RejectPolicy(onRejected)
	if len(r.Kinds) == 0 {
		r.Kinds = nil // every kind, as the other stores return it
	}
	r.NextAttemptAt = r.NextAttemptAt.UTC()
	r.ParkedAt, r.LeaseUntil = timeOf(parkedAt), timeOf(leaseUntil)
	return st, err
}
