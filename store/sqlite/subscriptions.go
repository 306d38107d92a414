package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/heraldpush/herald/store"
)

// Subscriptions (store.Subscriber). A stream created later is materialised
// by the trigger herald_stream_subscriptions, in its creating transaction;
// Subscribe materialises the streams that exist, in its own. SQLite has one
// writer, so no stream falls between the two.

// Subscribe implements store.Subscriber.
func (s *Store) Subscribe(ctx context.Context, sub, was store.Subscription) (store.SubscriptionStatus, error) {
	if err := sub.Validate(); err != nil {
		return store.SubscriptionStatus{}, err
	}
	config, err := s.sealer.SealSubscription(sub.Prefix, sub.ID, sub.Config)
	if err != nil {
		return store.SubscriptionStatus{}, err
	}
	var out store.SubscriptionStatus
	err = s.write(ctx, "subscribe", func(tx *sql.Tx) error {
		old, err := queryAll(ctx, tx, "subscribe: read", nil, scanSubscription, stmt("subscriptions"), sub.Prefix, sub.ID)
		if err != nil {
			return err
		}
		revoke, err := s.sealer.SubscribeOver(sub, was, old)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, stmt("upsert_subscription"), sub.Prefix, sub.ID, sub.Namespace, sub.URL, store.HostOf(sub.URL),
			config, string(sub.OnRejected), encodeKinds(sub.Kinds), max(sub.Window, 1), int64(sub.RetainMax), store.EncodeRetry(sub.Retry), sub.FromHead)
		if err != nil {
			return translate("subscribe", err)
		}
		for _, q := range []struct {
			op, sql string
			args    []any
		}{
			{"subscribe: materialise", stmt("materialise"), []any{sub.Prefix, sub.ID, store.PrefixEnd(sub.Prefix)}},
			{"subscribe: update", stmt("update_subscribed"), []any{sub.Prefix, sub.ID, revoke}},
			{"subscribe: wake", stmt("wake_range"), []any{sub.Prefix, store.PrefixEnd(sub.Prefix), int64(dueNow)}},
		} {
			if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
				return translate(q.op, err)
			}
		}
		list, err := queryAll(ctx, tx, "subscribe: read", nil, scanSubscription, stmt("subscriptions"), sub.Prefix, sub.ID)
		if len(list) == 1 {
			out = list[0]
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
		err := tx.QueryRowContext(ctx, stmt("delete_subscription"), prefix, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return store.SubscriptionNotFound(prefix, id)
		}
		if err != nil {
			return translate("unsubscribe", err)
		}
		res, err := tx.ExecContext(ctx, stmt("unsubscribe"), prefix, id)
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
	return s.sealer.OpenSubscriptions(queryAll(ctx, s.r, "list subscriptions", []store.SubscriptionStatus{}, scanSubscription, stmt("subscriptions"), prefix, ""))
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
