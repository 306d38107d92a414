package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Subscriptions (store.Subscriber). A stream created later is materialised
// by the trigger herald_stream_subscriptions, in the sequencer step that
// creates its row; Subscribe materialises the streams that exist. The
// advisory lock (exclusive here, shared in the trigger) orders the two, so
// that no stream falls between them.
const (
	sqlSubscribeLock      = `SELECT pg_advisory_xact_lock(7106209355)`
	sqlUpsertSubscription = `INSERT INTO herald_subscription
    (prefix, id, namespace, url, host, config, on_rejected, kinds, "window", retain_max_ns, retry, from_head)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (prefix, id) DO UPDATE SET namespace = excluded.namespace, url = excluded.url, host = excluded.host,
    config = excluded.config, on_rejected = excluded.on_rejected, kinds = excluded.kinds, "window" = excluded."window",
    retain_max_ns = excluded.retain_max_ns, retry = excluded.retry`
	// $1 prefix, $2 id, $3 store.PrefixEnd: the streams under the prefix are
	// an index range.
	sqlMaterialise = `INSERT INTO herald_registration (stream, id, namespace, url, host, on_rejected, kinds, "window",
    retain_max_ns, retry, subscription, next_seq, next_attempt_at)
SELECT s.stream, u.id, u.namespace, u.url, u.host, u.on_rejected, u.kinds, u."window",
    u.retain_max_ns, u.retry, u.prefix, CASE WHEN u.from_head THEN s.head + 1 ELSE s.oldest_seq END, '0001-01-01 00:00:00+00'
FROM herald_subscription u JOIN herald_stream s ON s.stream >= $1 AND s.stream < $3
WHERE u.prefix = $1 AND u.id = $2 AND NOT (u.from_head AND s.final_seq IS NOT NULL)
ON CONFLICT DO NOTHING`
	sqlUpdateSubscribed = `UPDATE herald_registration r
SET namespace = u.namespace, url = u.url, host = u.host, on_rejected = u.on_rejected,
    kinds = u.kinds, "window" = u."window", retain_max_ns = u.retain_max_ns, retry = u.retry
FROM herald_subscription u WHERE u.prefix = $1 AND u.id = $2 AND r.subscription = $1 AND r.id = $2`
	// After the commit, the streams under the prefix are marked pending, so
	// that Due looks at them; one another transaction holds is being
	// numbered (the sequencer marks it) or cleared (it rereads the cursors).
	sqlMarkRange = `UPDATE herald_stream SET pending = true WHERE stream IN (
    SELECT stream FROM herald_stream WHERE stream >= $1 AND stream < $2 AND NOT pending FOR NO KEY UPDATE SKIP LOCKED)`
	sqlDeleteSubscription = `DELETE FROM herald_subscription WHERE prefix = $1 AND id = $2`
	sqlUnsubscribe        = `DELETE FROM herald_registration WHERE subscription = $1 AND id = $2`
	sqlSubscriptions      = `SELECT u.prefix, u.id, u.namespace, u.url, u.config, u.on_rejected, u.kinds, u."window", u.retain_max_ns, u.retry, u.from_head,
    (SELECT count(*)::int FROM herald_registration r WHERE r.subscription = u.prefix AND r.id = u.id)
FROM herald_subscription u WHERE $1::text = '' OR u.prefix = $1 ORDER BY u.prefix, u.id`
)

// Subscribe implements store.Subscriber.
func (s *Store) Subscribe(ctx context.Context, sub store.Subscription) (store.SubscriptionStatus, error) {
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
		b.Queue(sqlSubscribeLock)
		b.Queue(sqlUpsertSubscription, sub.Prefix, sub.ID, sub.Namespace, sub.URL, store.HostOf(sub.URL), config,
			string(sub.OnRejected), kinds, int32(max(sub.Window, 1)), int64(sub.RetainMax), store.EncodeRetry(sub.Retry), sub.FromHead)
		b.Queue(sqlMaterialise, sub.Prefix, sub.ID, end)
		b.Queue(sqlUpdateSubscribed, sub.Prefix, sub.ID)
		return s.dbErr(ctx, "subscribe", tx.SendBatch(ctx, b).Close())
	})
	if err != nil {
		return store.SubscriptionStatus{}, err
	}
	if _, err := s.pool.Exec(ctx, sqlMarkRange, sub.Prefix, end); err != nil {
		return store.SubscriptionStatus{}, s.dbErr(ctx, "subscribe: mark streams", err)
	}
	s.poke()
	list, err := s.Subscriptions(ctx, sub.Prefix)
	for _, st := range list {
		if st.ID == sub.ID {
			return st, nil
		}
	}
	return store.SubscriptionStatus{}, err
}

// Unsubscribe implements store.Subscriber; the registrations' evidence goes
// with them.
func (s *Store) Unsubscribe(ctx context.Context, prefix, id string) (int, error) {
	if !validKey(prefix, id) {
		return 0, fmt.Errorf("subscription %s: %w", store.SubscriptionName(prefix, id), journal.ErrNotFound)
	}
	n := 0
	err := s.inTx(ctx, "unsubscribe", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, sqlDeleteSubscription, prefix, id)
		if err != nil {
			return s.dbErr(ctx, "unsubscribe", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("subscription %s: %w", store.SubscriptionName(prefix, id), journal.ErrNotFound)
		}
		tag, err = tx.Exec(ctx, sqlUnsubscribe, prefix, id)
		n = int(tag.RowsAffected())
		return s.dbErr(ctx, "unsubscribe: registrations", err)
	})
	return n, err
}

// Subscriptions implements store.Subscriber.
func (s *Store) Subscriptions(ctx context.Context, prefix string) ([]store.SubscriptionStatus, error) {
	if !validText(prefix) {
		return []store.SubscriptionStatus{}, nil
	}
	list, err := query(ctx, s, "list subscriptions", []store.SubscriptionStatus{}, func(row pgx.CollectableRow) (st store.SubscriptionStatus, err error) {
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
	}, sqlSubscriptions, prefix)
	for i, st := range list {
		if list[i].Config, err = s.sealer.OpenSubscription(st.Prefix, st.ID, st.Config); err != nil {
			return nil, err
		}
	}
	return list, err
}
