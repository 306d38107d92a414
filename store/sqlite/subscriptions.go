package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Subscriptions (store.Subscriber). A stream created later is materialised
// by the trigger herald_stream_subscriptions, in its creating transaction;
// Subscribe materialises the streams that exist, in its own. SQLite has one
// writer, so no stream falls between the two.
const (
	sqlUpsertSubscription = `INSERT INTO herald_subscription
			(prefix, id, namespace, url, host, config, on_rejected, kinds, "window", retain_max_ns, retry, from_head)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (prefix, id) DO UPDATE SET namespace = excluded.namespace, url = excluded.url, host = excluded.host,
			config = excluded.config, on_rejected = excluded.on_rejected, kinds = excluded.kinds, "window" = excluded."window",
			retain_max_ns = excluded.retain_max_ns, retry = excluded.retry`
	// ?1 prefix, ?2 id, ?3 store.PrefixEnd: the streams under the prefix are
	// an index range.
	sqlMaterialise = `INSERT INTO herald_registration (stream, id, namespace, url, host, on_rejected, kinds, "window",
				retain_max_ns, retry, subscription, next_seq)
			SELECT s.stream, u.id, u.namespace, u.url, u.host, u.on_rejected, u.kinds, u."window",
				u.retain_max_ns, u.retry, u.prefix, CASE WHEN u.from_head THEN s.head + 1 ELSE s.oldest_seq END
			FROM herald_subscription AS u JOIN herald_stream AS s ON s.stream >= ?1 AND s.stream < ?3
			WHERE u.prefix = ?1 AND u.id = ?2 AND NOT (u.from_head AND s.sealed)
			ON CONFLICT DO NOTHING`
	sqlUpdateSubscribed = `UPDATE herald_registration SET (namespace, url, host, on_rejected, kinds, "window", retain_max_ns, retry) =
			(SELECT namespace, url, host, on_rejected, kinds, "window", retain_max_ns, retry FROM herald_subscription WHERE prefix = ?1 AND id = ?2)
			WHERE subscription = ?1 AND id = ?2`
	sqlWakeRange          = "UPDATE herald_stream SET wake_at = MIN(IFNULL(wake_at, ?3), ?3) WHERE stream >= ?1 AND stream < ?2"
	sqlDeleteSubscription = "DELETE FROM herald_subscription WHERE prefix = ? AND id = ? RETURNING 1"
	sqlUnsubscribe        = "DELETE FROM herald_registration WHERE subscription = ? AND id = ?"
	sqlSubscriptions      = `SELECT u.prefix, u.id, u.namespace, u.url, u.config, u.on_rejected, u.kinds, u."window", u.retain_max_ns, u.retry, u.from_head,
			(SELECT COUNT(*) FROM herald_registration AS r WHERE r.subscription = u.prefix AND r.id = u.id)
		FROM herald_subscription AS u WHERE ?1 = '' OR u.prefix = ?1 ORDER BY u.prefix, u.id`
)

// Subscribe implements store.Subscriber.
func (s *Store) Subscribe(ctx context.Context, sub store.Subscription) (store.SubscriptionStatus, error) {
	if err := sub.Validate(); err != nil {
		return store.SubscriptionStatus{}, err
	}
	config, err := s.sealer.SealSubscription(sub.Prefix, sub.ID, sub.Config)
	if err != nil {
		return store.SubscriptionStatus{}, err
	}
	var out store.SubscriptionStatus
	err = s.write(ctx, "subscribe", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, sqlUpsertSubscription, sub.Prefix, sub.ID, sub.Namespace, sub.URL, store.HostOf(sub.URL),
			config, string(sub.OnRejected), encodeKinds(sub.Kinds), max(sub.Window, 1), int64(sub.RetainMax), store.EncodeRetry(sub.Retry), sub.FromHead)
		if err != nil {
			return translate("subscribe", err)
		}
		for _, q := range []struct {
			op, sql string
			args    []any
		}{
			{"subscribe: materialise", sqlMaterialise, []any{sub.Prefix, sub.ID, store.PrefixEnd(sub.Prefix)}},
			{"subscribe: update", sqlUpdateSubscribed, []any{sub.Prefix, sub.ID}},
			{"subscribe: wake", sqlWakeRange, []any{sub.Prefix, store.PrefixEnd(sub.Prefix), int64(dueNow)}},
		} {
			if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
				return translate(q.op, err)
			}
		}
		list, err := queryAll(ctx, tx, "subscribe: read", nil, scanSubscription, sqlSubscriptions, sub.Prefix)
		for _, st := range list {
			if st.ID == sub.ID {
				out = st
			}
		}
		return err
	})
	out.Config = sub.Config
	return out, err
}

// Unsubscribe implements store.Subscriber; the registrations' evidence goes
// with them (ON DELETE CASCADE).
func (s *Store) Unsubscribe(ctx context.Context, prefix, id string) (int, error) {
	var n int64
	err := s.write(ctx, "unsubscribe", func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, sqlDeleteSubscription, prefix, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("subscription %s: %w", store.SubscriptionName(prefix, id), journal.ErrNotFound)
		}
		if err != nil {
			return translate("unsubscribe", err)
		}
		res, err := tx.ExecContext(ctx, sqlUnsubscribe, prefix, id)
		if err != nil {
			return translate("unsubscribe: registrations", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// Subscriptions implements store.Subscriber.
func (s *Store) Subscriptions(ctx context.Context, prefix string) ([]store.SubscriptionStatus, error) {
	list, err := queryAll(ctx, s.r, "list subscriptions", []store.SubscriptionStatus{}, scanSubscription, sqlSubscriptions, prefix)
	for i, st := range list {
		if list[i].Config, err = s.sealer.OpenSubscription(st.Prefix, st.ID, st.Config); err != nil {
			return nil, err
		}
	}
	return list, err
}

func scanSubscription(sc scanner) (st store.SubscriptionStatus, err error) {
	var (
		config                   []byte
		onRejected, kinds, retry string
	)
	err = sc.Scan(&st.Prefix, &st.ID, &st.Namespace, &st.URL, &config, &onRejected, &kinds, &st.Window, &st.RetainMax, &retry, &st.FromHead, &st.Streams)
	if err != nil {
		return st, err
	}
	if st.Retry, err = store.DecodeRetry(retry); err != nil {
		return st, err
	}
	st.Config, st.OnRejected = store.Config(config), store.RejectPolicy(onRejected)
	st.Kinds, err = decodeKinds(kinds)
	return st, err
}
