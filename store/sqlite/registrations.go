package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

func scanStatus(sc scanner) (store.Status, error) {
	var (
		st                                store.Status
		config                            []byte
		onRejected, kinds, retry, rate    string
		next, head                        int64
		nextAttempt, parkedAt, leaseUntil sql.NullInt64
		failingSince, pacedUntil          sql.NullInt64
	)
	err := sc.Scan(&st.Stream, &st.ID, &st.Namespace, &st.URL, &config, &onRejected, &next, &st.Attempts,
		&nextAttempt, &st.Parked, &parkedAt, &st.LastError, &st.LeaseOwner, &leaseUntil, &kinds, &head, &st.Sealed, &st.HostFailures, &st.Window,
		&st.RetainMax, &st.Subscription, &retry, &failingSince, &st.Paused, &rate, &pacedUntil)
	if err != nil {
		return store.Status{}, err
	}
	if st.Retry, err = store.DecodeRetry(retry); err != nil {
		return store.Status{}, fmt.Errorf("sqlite: %w", err)
	}
	if st.Rate, err = store.DecodeRate(rate); err != nil {
		return store.Status{}, fmt.Errorf("sqlite: %w", err)
	}
	st.FailingSince, st.PacedUntil = instant(failingSince), instant(pacedUntil)
	if st.Kinds, err = decodeKinds(kinds); err != nil {
		return store.Status{}, err
	}
	st.Config, st.OnRejected = store.Config(config), store.RejectPolicy(onRejected)
	st.NextSeq, st.Head = uint64(next), uint64(head)
	st.NextAttemptAt, st.ParkedAt, st.LeaseUntil = instant(nextAttempt), instant(parkedAt), instant(leaseUntil)
	return st, nil
}

func getStatus(ctx context.Context, q queryer, stream, id string) (store.Status, error) {
	st, err := scanStatus(q.QueryRowContext(ctx, stmt("get"), stream, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Status{}, store.NotFound(stream, id)
	}
	if err != nil {
		return store.Status{}, translate("read registration", err)
	}
	return st, nil
}

// Register implements store.Store. An update of the destination keeps the
// cursor and retry state.
func (s *Store) Register(ctx context.Context, r store.Registration) (store.Registration, error) {
	return s.register(ctx, r, nil)
}

// Update implements store.Store: the comparison is made in Register's
// write transaction.
func (s *Store) Update(ctx context.Context, r, was store.Registration) (store.Registration, error) {
	return s.register(ctx, r, &was)
}

// register is Register, or Update if was is set.
func (s *Store) register(ctx context.Context, r store.Registration, was *store.Registration) (store.Registration, error) {
	if err := r.Validate(); err != nil {
		return store.Registration{}, err
	}
	config, err := s.sealer.SealConfig(r.Key(), r.Config)
	if err != nil {
		return store.Registration{}, err
	}
	// The destination, as statement update_registration and statement insert_registration take it.
	dest := []any{r.Namespace, r.URL, r.Host(), config, string(r.OnRejected), encodeKinds(r.Kinds), max(r.Window, 1), int64(r.RetainMax),
		store.EncodeRetry(r.Retry), r.Rate.String(), r.Stream, r.ID}
	var out store.Status
	err = s.writeTo(ctx, "register", r.Stream, r.ID, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, stmt("ensure_stream"), r.Stream); err != nil {
			return translate("register: create stream", err)
		}
		old, err := getStatus(ctx, tx, r.Stream, r.ID)
		if err != nil && !errors.Is(err, journal.ErrNotFound) {
			return err
		}
		var stored *store.Registration
		var open error
		if err == nil {
			if old.Subscription != "" {
				return store.MadeBy(r, old.Subscription)
			}
			stored = &old.Registration
			stored.Config, open = s.sealer.OpenRegistration(*stored)
		}
		if was != nil {
			if err := store.CheckUpdate(r, *was, stored, open); err != nil {
				return err
			}
		}
		if stored == nil {
			err = insert(ctx, tx, r, dest)
		} else {
			revoke := open != nil || !r.SameDelivery(*stored) // one that no longer opens has changed
			_, err = tx.ExecContext(ctx, stmt("update_registration"), append(dest, revoke)...)
			paceGone := r.Rate.IsZero() && !old.Rate.IsZero() && !old.PacedUntil.IsZero()
			hostGone := r.Host() != old.Host() && old.HostFailures > 0
			if err = translate("register: update", err); err == nil && (paceGone || hostGone) {
				err = rewake(ctx, tx, r.Stream, int64(old.NextSeq)) // it may be due at once
			}
		}
		if err != nil {
			return err
		}
		out, err = getStatus(ctx, tx, r.Stream, r.ID)
		return err
	})
	if err == nil {
		out.Config, err = s.sealer.OpenRegistration(out.Registration)
	}
	return out.Registration, err
}

// insert adds registration r, its destination dest, at its first cursor
// (store.FirstCursor).
func insert(ctx context.Context, tx *sql.Tx, r store.Registration, dest []any) error {
	var (
		head, oldest int64
		sealed       bool
	)
	if err := tx.QueryRowContext(ctx, stmt("register_head"), r.Stream).Scan(&head, &sealed, &oldest); err != nil {
		return translate("register: read head", err)
	}
	next, err := store.FirstCursor(r, uint64(head), uint64(oldest), sealed)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, stmt("insert_registration"), append(dest, int64(next))...)
	if err != nil {
		return translate("register: insert", err)
	}
	return rewake(ctx, tx, r.Stream, int64(next))
}

// Unregister implements store.Store. The evidence goes with the registration
// (ON DELETE CASCADE).
func (s *Store) Unregister(ctx context.Context, stream, id string) error {
	return s.writeTo(ctx, "unregister", stream, id, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, stmt("delete_registration"), stream, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return store.NotFound(stream, id)
		}
		return translate("unregister", err)
	})
}

// Complete implements store.Store: the registration and its evidence are
// deleted, fenced by the claim; the journal keeps its records.
func (s *Store) Complete(ctx context.Context, c store.Claim) error {
	return s.fenced(ctx, "complete", c, 1, func(tx *sql.Tx, _ fence) error {
		st, err := getStatus(ctx, tx, c.Stream, c.ID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, stmt("complete"), c.Stream, c.ID, c.Owner); err != nil {
			return translate("complete", err)
		}
		// The instant is the claim's: Due stamped it as NextAttemptAt.
		e, ok := store.RegistrationEvent(store.KindCompleted, st.Registration, st.Head+1, "", "", st.NextAttemptAt)
		return s.event(ctx, tx, e, ok)
	})
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, stream, id string) (store.Status, error) {
	st, err := getStatus(ctx, s.r, stream, id)
	if err == nil {
		st.Config, err = s.sealer.OpenRegistration(st.Registration)
	}
	return st, err
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, q store.ListQuery) ([]store.Status, error) {
	limit, err := store.ListLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	var (
		where []string
		args  []any
	)
	if q.Stream != "" {
		where, args = append(where, "r.stream = ?"), append(args, q.Stream)
	}
	if q.Namespace != "" {
		where, args = append(where, "r.namespace = ?"), append(args, q.Namespace)
	}
	if q.Parked {
		where = append(where, "r.parked = 1")
	}
	if q.Lagging {
		where = append(where, "r.next_seq <= s.head")
	}
	if q.Subscription != "" {
		where, args = append(where, "r.subscription = ?", "(? = '' OR r.id = ?)"), append(args, q.Subscription, q.ID, q.ID)
	}
	if q.After != (store.Key{}) {
		where, args = append(where, "(r.stream, r.id) > (?, ?)"), append(args, q.After.Stream, q.After.ID)
	}
	query := stmt("list")
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY r.stream, r.id LIMIT ?"
	sts, err := queryAll(ctx, s.r, "list registrations", nil, scanStatus, query, append(args, limit)...)
	s.sealer.Open(sts)
	return sts, err
}

// Stats implements store.Store. It counts in SQL, in one read transaction.
func (s *Store) Stats(ctx context.Context, at time.Time) (store.Stats, error) {
	atN, err := nanos("at", at)
	if err != nil {
		return store.Stats{}, err
	}
	if !atN.Valid {
		atN.Int64 = dueNow // the zero instant: every lease is live
	}
	st := store.Stats{Namespaces: map[string]store.NamespaceStats{}}
	err = s.read(ctx, "stats", func(tx *sql.Tx) error {
		_, err := queryAll(ctx, tx, "stats", nil, func(sc scanner) (n store.NamespaceStats, err error) {
			var ns string
			err = sc.Scan(&ns, &n.Ready, &n.Retrying, &n.Idle, &n.Parked, &n.Paused, &n.Leased, &n.Behind)
			st.Namespaces[ns] = n
			return n, err
		}, stmt("stats"), atN.Int64)
		if err == nil {
			st.Lagging, err = queryAll(ctx, tx, "stats: lagging", nil, scanStatus, stmt("lagging"), store.MaxLagging)
		}
		if err != nil {
			return err
		}
		oldest, err := queryAll(ctx, tx, "stats: oldest parked", nil, scanStatus, stmt("oldest_parked"))
		s.sealer.Open(st.Lagging)
		s.sealer.Open(oldest)
		if len(oldest) == 1 {
			st.OldestParked = &oldest[0]
		}
		return err
	})
	if err != nil {
		return store.Stats{}, err
	}
	return st, nil
}

// encodeKinds stores kind patterns as a JSON array ("[]" for every kind).
func encodeKinds(kinds []string) string {
	if len(kinds) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(kinds) // strings always encode
	return string(b)
}

// decodeKinds reads what encodeKinds stored; nil for every kind.
func decodeKinds(s string) ([]string, error) {
	var kinds []string
	if err := json.Unmarshal([]byte(s), &kinds); err != nil {
		return nil, fmt.Errorf("sqlite: a registration's kinds %q are not a JSON array: %w", s, err)
	}
	if len(kinds) == 0 {
		return nil, nil
	}
	return kinds, nil
}

// Reseal implements store.Resealer: it reads a page in a read transaction,
// then writes the configs it sealed anew in one write transaction, each
// only where the row still holds what was read.
func (s *Store) Reseal(ctx context.Context, after store.Key, limit int) (store.ResealPage, error) {
	if limit < 1 {
		return store.ResealPage{}, journal.Invalid("limit", "is %d: it must be 1 or more", limit)
	}
	type row struct {
		key            store.Key
		stored, sealed []byte
	}
	rows, err := queryAll(ctx, s.r, "reseal: read", nil, func(sc scanner) (r row, err error) {
		err = sc.Scan(&r.key.Stream, &r.key.ID, &r.stored)
		return r, err
	}, stmt("reseal_page"), after.Stream, after.ID, limit)
	if err != nil {
		return store.ResealPage{}, err
	}
	page := store.ResealPage{Read: len(rows), More: len(rows) == limit}
	var changed []row
	for _, r := range rows {
		sealed, ok, err := s.sealer.Reseal(r.key, r.stored)
		if err != nil {
			return store.ResealPage{}, err
		}
		if ok {
			r.sealed = sealed
			changed = append(changed, r)
		}
		page.Last = r.key
	}
	if len(changed) == 0 {
		return page, nil
	}
	err = s.write(ctx, "reseal", func(tx *sql.Tx) error {
		for _, r := range changed {
			res, err := tx.ExecContext(ctx, stmt("reseal"), r.sealed, r.key.Stream, r.key.ID, r.stored)
			if err != nil {
				return translate("reseal", err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				page.Resealed++
			}
		}
		return nil
	})
	return page, err
}

// ResealOthers implements store.Resealer: the actor keys and the
// subscriptions' configs, in one write.
func (s *Store) ResealOthers(ctx context.Context) (n int, err error) {
	scan := func(sc scanner) (x store.Sealed, err error) {
		err = sc.Scan(&x.Prefix, &x.ID, &x.Stored)
		return x, err
	}
	err = s.write(ctx, "reseal actor keys and subscriptions", func(tx *sql.Tx) error {
		keys, err := queryAll(ctx, tx, "reseal: read actor keys", nil, scan, stmt("reseal_read_actor_keys"))
		if err != nil {
			return err
		}
		subs, err := queryAll(ctx, tx, "reseal: read subscriptions", nil, scan, stmt("reseal_read_subscriptions"))
		if err != nil {
			return err
		}
		n, err = s.sealer.ResealOthers(keys, subs, func(key bool, r store.Sealed, out []byte) error {
			op, q := "reseal subscription", stmt("reseal_subscription")
			if key {
				op, q = "reseal actor key", stmt("reseal_actor_key")
			}
			_, err := tx.ExecContext(ctx, q, out, r.Prefix, r.ID)
			return translate(op, err)
		})
		return err // a retried write counts again from 0
	})
	return n, err
}
