package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

func scanStatus(sc interface{ Scan(...any) error }) (push.Status, error) {
	var (
		st                                push.Status
		config                            []byte
		onRejected                        string
		next, head                        int64
		nextAttempt, parkedAt, leaseUntil sql.NullInt64
		kinds                             string
	)
	err := sc.Scan(&st.Stream, &st.ID, &st.Namespace, &st.URL, &config, &onRejected, &next, &st.Attempts,
		&nextAttempt, &st.Parked, &parkedAt, &st.LastError, &st.LeaseOwner, &leaseUntil, &kinds, &head, &st.Sealed, &st.HostFailures, &st.Window)
	if err != nil {
		return push.Status{}, err
	}
	if st.Kinds, err = decodeKinds(kinds); err != nil {
		return push.Status{}, err
	}
	if config != nil {
		st.Config = push.Config(config)
	}
	st.OnRejected = push.RejectPolicy(onRejected)
	st.NextSeq, st.Head = uint64(next), uint64(head)
	st.NextAttemptAt, st.ParkedAt, st.LeaseUntil = instant(nextAttempt), instant(parkedAt), instant(leaseUntil)
	return st, nil
}

func getStatus(ctx context.Context, q queryer, stream, id string) (push.Status, error) {
	st, err := scanStatus(q.QueryRowContext(ctx, sqlGet, stream, id))
	if errors.Is(err, sql.ErrNoRows) {
		return push.Status{}, notFound(stream, id)
	}
	if err != nil {
		return push.Status{}, translate("read registration", err)
	}
	return st, nil
}

func notFound(stream, id string) error {
	return fmt.Errorf("registration %s: %w", push.Name(stream, id), journal.ErrNotFound)
}

// Register implements push.Store.
func (s *Store) Register(ctx context.Context, r push.Registration) (push.Registration, error) {
	if err := r.Validate(); err != nil {
		return push.Registration{}, err
	}
	next, err := seqArg("next seq", max(r.NextSeq, 1))
	if err != nil {
		return push.Registration{}, err
	}
	var config []byte
	if r.Config != nil {
		config = slices.Clone([]byte(r.Config))
	}
	kinds, window := encodeKinds(r.Kinds), max(r.Window, 1)
	var out push.Registration
	err = s.writeTo(ctx, "register", r.Stream, r.ID, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, sqlEnsureStream, r.Stream); err != nil {
			return translate("register: create stream", err)
		}
		old, err := getStatus(ctx, tx, r.Stream, r.ID)
		switch {
		case err == nil:
			// An update of the destination keeps the cursor and retry state.
			_, err := tx.ExecContext(ctx, sqlUpdateRegistration, r.Namespace, r.URL, r.Host(), config, string(r.OnRejected), kinds, window, r.Stream, r.ID)
			if err != nil {
				return translate("register: update", err)
			}
			out = old.Registration
			out.Namespace, out.URL, out.Config, out.OnRejected = r.Namespace, r.URL, push.Config(slices.Clone(config)), r.OnRejected
			out.Kinds, out.Window = slices.Clone(r.Kinds), window
			return nil
		case !errors.Is(err, journal.ErrNotFound):
			return err
		}
		var (
			head, oldest int64
			sealed       bool
		)
		if err := tx.QueryRowContext(ctx, sqlRegisterHead, r.Stream).Scan(&head, &sealed, &oldest); err != nil {
			return translate("register: read head", err)
		}
		if r.NextSeq == 0 {
			next = oldest // from the oldest retained record
		}
		if err := store.CheckRetained(r.Stream, uint64(next), uint64(oldest)); err != nil {
			return err
		}
		if sealed && next > head {
			return fmt.Errorf("register %s at #%d: %w", push.Name(r.Stream, r.ID), next,
				&journal.SealedError{Stream: r.Stream, FinalSeq: uint64(head)})
		}
		if err := store.ValidateCursor(uint64(next), uint64(head)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, sqlInsertRegistration, r.Stream, r.ID, r.Namespace, r.URL, r.Host(), config, string(r.OnRejected), next, kinds, window)
		if err != nil {
			return translate("register: insert", err)
		}
		if err := rewake(ctx, tx, r.Stream, regState{nextSeq: next}); err != nil {
			return err
		}
		out = push.Registration{Stream: r.Stream, ID: r.ID, Namespace: r.Namespace, URL: r.URL,
			Config: push.Config(slices.Clone(config)), OnRejected: r.OnRejected, NextSeq: uint64(next), Kinds: slices.Clone(r.Kinds),
			Window: window}
		return nil
	})
	if err != nil {
		return push.Registration{}, err
	}
	return out, nil
}

// Unregister implements push.Store. The evidence goes with the registration
// (ON DELETE CASCADE).
func (s *Store) Unregister(ctx context.Context, stream, id string) error {
	return s.writeTo(ctx, "unregister", stream, id, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlDeleteRegistration, stream, id)
		if err != nil {
			return translate("unregister", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return translate("unregister", err)
		} else if n == 0 {
			return notFound(stream, id)
		}
		return nil
	})
}

// Complete implements push.Store: the registration and its evidence are
// deleted, fenced by the claim; the journal keeps its records.
func (s *Store) Complete(ctx context.Context, c push.Claim) error {
	return s.writeTo(ctx, "complete", c.Stream, c.ID, func(tx *sql.Tx) error {
		if err := fence(ctx, tx, c, 1); err != nil {
			return err
		}
		st, err := getStatus(ctx, tx, c.Stream, c.ID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlComplete, c.Stream, c.ID, c.Owner); err != nil {
			return translate("complete", err)
		}
		// The instant is the claim's: Due stamped it as NextAttemptAt.
		e, ok := push.RegistrationEvent(push.KindCompleted, st.Registration, st.Head+1, "", "", st.NextAttemptAt)
		if !ok {
			return nil
		}
		return s.appendEvent(ctx, tx, e)
	})
}

// Get implements push.Store.
func (s *Store) Get(ctx context.Context, stream, id string) (push.Status, error) {
	return getStatus(ctx, s.r, stream, id)
}

// List implements push.Store.
func (s *Store) List(ctx context.Context, q push.ListQuery) ([]push.Status, error) {
	limit, err := push.ListLimit(q.Limit)
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
	if q.After != (push.Key{}) {
		where, args = append(where, "(r.stream, r.id) > (?, ?)"), append(args, q.After.Stream, q.After.ID)
	}
	// Built at run time: one WHERE clause per field of q that is set.
	query := "SELECT " + statusColumns + statusFrom
	if len(where) > 0 {
		query += "WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY r.stream, r.id LIMIT ?"
	return queryStatuses(ctx, s.r, "list registrations", query, append(args, limit)...)
}

type rowsQueryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryStatuses(ctx context.Context, q rowsQueryer, op, query string, args ...any) ([]push.Status, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(op, err)
	}
	defer rows.Close()
	var out []push.Status
	for rows.Next() {
		st, err := scanStatus(rows)
		if err != nil {
			return nil, translate(op, err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(op, err)
	}
	return out, nil
}

// Stats implements push.Store. It counts in SQL, in one read transaction.
func (s *Store) Stats(ctx context.Context, at time.Time) (push.Stats, error) {
	atN, err := nanos("at", at)
	if err != nil {
		return push.Stats{}, err
	}
	if !atN.Valid {
		atN.Int64 = dueNow // the zero instant: every lease is live
	}
	st := push.Stats{Namespaces: map[string]push.NamespaceStats{}}
	err = s.read(ctx, "stats", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, sqlStats, atN.Int64)
		if err != nil {
			return translate("stats", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				ns     string
				n      push.NamespaceStats
				behind int64
			)
			if err := rows.Scan(&ns, &n.Ready, &n.Retrying, &n.Idle, &n.Parked, &n.Leased, &behind); err != nil {
				return translate("stats", err)
			}
			n.Behind = uint64(behind)
			st.Namespaces[ns] = n
		}
		if err := rows.Err(); err != nil {
			return translate("stats", err)
		}
		st.Lagging, err = queryStatuses(ctx, tx, "stats: lagging", sqlLagging, push.MaxLagging)
		if err != nil {
			return err
		}
		oldest, err := queryStatuses(ctx, tx, "stats: oldest parked", sqlOldestParked)
		if err != nil {
			return err
		}
		if len(oldest) == 1 {
			st.OldestParked = &oldest[0]
		}
		return nil
	})
	if err != nil {
		return push.Stats{}, err
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
