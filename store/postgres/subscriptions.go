package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/store"
)

// Subscribe implements store.Subscriber: the subscriptions' lock orders
// every Subscribe, so that the one it reads stays as read until its write.
func (s *Store) Subscribe(ctx context.Context, sub, was store.Subscription) (store.SubscriptionStatus, error) {
	if err := sub.Validate(); err != nil {
		return store.SubscriptionStatus{}, err
	}
	config, err := s.sealer.SealSubscription(sub.Prefix, sub.ID, sub.Config) // nil: NULL for none
	if err != nil {
		return store.SubscriptionStatus{}, err
	}
	kinds := sub.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	end := store.PrefixEnd(sub.Prefix)
	err = s.inTx(ctx, "subscribe", func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(stmt("subscribe_lock"))
		var old []store.SubscriptionStatus
		b.Queue(stmt("subscriptions"), pgx.NamedArgs{"prefix": sub.Prefix, "id": sub.ID}).Query(appendTo(&old, scanSubscription))
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "subscribe: read", err)
		}
		revoke, err := s.sealer.SubscribeOver(sub, was, old)
		if err != nil {
			return err
		}
		b = &pgx.Batch{}
		key := pgx.NamedArgs{"prefix": sub.Prefix, "id": sub.ID, "end": end, "revoke": revoke}
		b.Queue(stmt("upsert_subscription"), pgx.NamedArgs{"prefix": sub.Prefix, "id": sub.ID, "namespace": sub.Namespace, "url": sub.URL,
			"host": store.HostOf(sub.URL), "config": config, "on_rejected": string(sub.OnRejected), "kinds": kinds,
			"window": int32(max(sub.Window, 1)), "retain_max_ns": int64(sub.RetainMax), "retry": store.EncodeRetry(sub.Retry), "from_head": sub.FromHead})
		b.Queue(stmt("materialise"), key)
		b.Queue(stmt("update_subscribed"), key)
		return s.dbErr(ctx, "subscribe", tx.SendBatch(ctx, b).Close())
	})
	if err != nil {
		return store.SubscriptionStatus{}, err
	}
	if _, err := s.pool.Exec(ctx, stmt("mark_range"), pgx.NamedArgs{"prefix": sub.Prefix, "end": end}); err != nil {
		return store.SubscriptionStatus{}, s.dbErr(ctx, "subscribe: mark streams", err)
	}
	s.poke()
	list, err := s.subscriptions(ctx, sub.Prefix, sub.ID)
	if err != nil || len(list) == 0 {
		return store.SubscriptionStatus{}, err
	}
	return list[0], nil
}

// Unsubscribe implements store.Subscriber; the registrations' evidence goes
// with them.
func (s *Store) Unsubscribe(ctx context.Context, prefix, id string) (int, error) {
	if !validKey(prefix, id) {
		return 0, store.SubscriptionNotFound(prefix, id)
	}
	n, key := 0, pgx.NamedArgs{"prefix": prefix, "id": id}
	err := s.inTx(ctx, "unsubscribe", func(tx pgx.Tx) error {
		// Ordered against new streams' materialising as Subscribe is
		// (subscribe_lock), so that none commits a registration of it after
		// its registrations were deleted.
		if _, err := tx.Exec(ctx, stmt("subscribe_lock")); err != nil {
			return s.dbErr(ctx, "unsubscribe: lock", err)
		}
		tag, err := tx.Exec(ctx, stmt("delete_subscription"), key)
		if err != nil {
			return s.dbErr(ctx, "unsubscribe", err)
		}
		if tag.RowsAffected() == 0 {
			return store.SubscriptionNotFound(prefix, id)
		}
		tag, err = tx.Exec(ctx, stmt("unsubscribe"), key)
		n = int(tag.RowsAffected())
		return s.dbErr(ctx, "unsubscribe: registrations", err)
	})
	return n, err
}

// Subscriptions implements store.Subscriber.
func (s *Store) Subscriptions(ctx context.Context, prefix string) ([]store.SubscriptionStatus, error) {
	return s.subscriptions(ctx, prefix, "")
}

// subscriptions lists those of prefix and id, each "" for every one.
func (s *Store) subscriptions(ctx context.Context, prefix, id string) ([]store.SubscriptionStatus, error) {
	if !validText(prefix) || !validText(id) {
		return []store.SubscriptionStatus{}, nil
	}
	return s.sealer.OpenSubscriptions(query(ctx, s, "list subscriptions", []store.SubscriptionStatus{}, scanSubscription,
		stmt("subscriptions"), pgx.NamedArgs{"prefix": prefix, "id": id}))
}

// scanSubscription reads a row of statement subscriptions, its config as
// stored.
func scanSubscription(row pgx.CollectableRow) (st store.SubscriptionStatus, err error) {
	var retry string
	err = row.Scan(&st.Prefix, &st.ID, &st.Namespace, &st.URL, (*[]byte)(&st.Config), &st.OnRejected, &st.Kinds, &st.Window,
		(*int64)(&st.RetainMax), &retry, &st.FromHead, &st.Streams)
	if err == nil {
		st.Retry, err = store.DecodeRetry(retry)
	}
	if len(st.Kinds) == 0 {
		st.Kinds = nil
	}
	return st, err
}
