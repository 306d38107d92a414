package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Register implements store.Store (package doc, "Idle costs nothing").
func (s *Store) Register(ctx context.Context, r store.Registration) (store.Registration, error) {
	return s.register(ctx, r, nil)
}

// Update implements store.Store: Register's transaction compares the row
// it reads under the stream's lock, which every Register and Update takes.
func (s *Store) Update(ctx context.Context, r, was store.Registration) (store.Registration, error) {
	return s.register(ctx, r, &was)
}

// register is Register, or Update if was is set.
func (s *Store) register(ctx context.Context, r store.Registration, was *store.Registration) (store.Registration, error) {
	if err := cmp.Or(r.Validate(), checkSeq("next seq", r.NextSeq)); err != nil {
		return store.Registration{}, err
	}
	config, err := s.sealer.SealConfig(r.Key(), r.Config) // nil: NULL for none
	if err != nil {
		return store.Registration{}, err
	}
	var out store.Registration
	err = s.inTx(ctx, "register", func(tx pgx.Tx) error {
		var (
			head, oldest   uint64
			sealed, exists bool
			old            store.Status
		)
		b := &pgx.Batch{}
		b.Queue(stmt("mark_stream"), pgx.NamedArgs{"stream": r.Stream}).QueryRow(func(row pgx.Row) error { return row.Scan(&head, &sealed, &oldest) })
		b.Queue(stmt("get_locked"), pgx.NamedArgs{"stream": r.Stream, "id": r.ID}).QueryRow(func(row pgx.Row) (err error) {
			old, err = scanStatus(row)
			if exists = err == nil; errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "register", err)
		}
		if old.Subscription != "" {
			return store.MadeBy(r, old.Subscription)
		}
		revoke := false // an update that changes the delivery takes a turn's lease (store.Registration.SameDelivery)
		var stored *store.Registration
		var open error
		if exists {
			stored = &old.Registration
			stored.Config, open = s.sealer.OpenRegistration(*stored)
			revoke = open != nil || !r.SameDelivery(*stored) // one that no longer opens has changed
		}
		if was != nil {
			if err := store.CheckUpdate(r, *was, stored, open); err != nil {
				return err
			}
		}
		next := max(r.NextSeq, 1) // an update keeps the stored cursor
		if !exists {
			var err error
			if next, err = store.FirstCursor(r, head, oldest, sealed); err != nil {
				return err
			}
		}
		kinds := r.Kinds // the empty array for every kind
		if kinds == nil {
			kinds = []string{}
		}
		st, err := scanStatus(tx.QueryRow(ctx, stmt("upsert_registration"), pgx.NamedArgs{"stream": r.Stream, "id": r.ID,
			"namespace": r.Namespace, "url": r.URL, "config": config, "on_rejected": string(r.OnRejected), "next_seq": int64(next),
			"next_attempt_at": time.Time{}, "host": r.Host(), "kinds": kinds, "window": int32(max(r.Window, 1)),
			"retain_max_ns": int64(r.RetainMax), "retry": store.EncodeRetry(r.Retry), "rate": r.Rate.String(), "revoke": revoke}))
		out = st.Registration
		return s.dbErr(ctx, "register", err)
	})
	if err == nil {
		out.Config, err = s.sealer.OpenRegistration(out)
	}
	if err != nil {
		return store.Registration{}, err
	}
	return out, nil
}

// Unregister implements store.Store; the evidence goes too.
func (s *Store) Unregister(ctx context.Context, stream, id string) error {
	if !validKey(stream, id) {
		return store.NotFound(stream, id)
	}
	tag, err := s.pool.Exec(ctx, stmt("delete_registration"), pgx.NamedArgs{"stream": stream, "id": id})
	if err != nil {
		return s.dbErr(ctx, "unregister", err)
	}
	if tag.RowsAffected() == 0 {
		return store.NotFound(stream, id)
	}
	return nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, stream, id string) (store.Status, error) {
	if !validKey(stream, id) {
		return store.Status{}, store.NotFound(stream, id)
	}
	st, err := scanStatus(s.pool.QueryRow(ctx, stmt("get"), pgx.NamedArgs{"stream": stream, "id": id}))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Status{}, store.NotFound(stream, id)
	}
	if err != nil {
		return store.Status{}, s.dbErr(ctx, "get registration", err)
	}
	st.Config, err = s.sealer.OpenRegistration(st.Registration)
	return st, err
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, q store.ListQuery) ([]store.Status, error) {
	limit, err := store.ListLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	if !validText(q.Stream) || !validText(q.Namespace) || !validText(q.Subscription) || !validText(q.ID) {
		return nil, nil // names nothing PostgreSQL could store
	}
	if !validKey(q.After.Stream, q.After.ID) {
		return nil, journal.Invalid("after", "is not valid UTF-8 or holds a NUL byte")
	}
	sts, err := query(ctx, s, "list registrations", nil, rowTo(scanStatus),
		stmt("list"), pgx.NamedArgs{"stream": q.Stream, "namespace": q.Namespace, "parked": q.Parked, "lagging": q.Lagging,
			"after_stream": q.After.Stream, "after_id": q.After.ID, "limit": limit, "subscription": q.Subscription, "id": q.ID})
	s.sealer.Open(sts)
	return sts, err
}

// Stats implements store.Store with SQL aggregates.
func (s *Store) Stats(ctx context.Context, at time.Time) (store.Stats, error) {
	st := store.Stats{Namespaces: map[string]store.NamespaceStats{}}
	var parked []store.Status
	b := &pgx.Batch{}
	b.Queue(stmt("stats_namespaces"), pgx.NamedArgs{"at": at}).Query(func(rows pgx.Rows) error {
		var (
			ns string
			n  store.NamespaceStats
		)
		_, err := pgx.ForEachRow(rows, []any{&ns, &n.Ready, &n.Retrying, &n.Idle, &n.Parked, &n.Paused, &n.Leased, &n.Behind}, func() error {
			st.Namespaces[ns] = n
			return nil
		})
		return err
	})
	b.Queue(stmt("stats_lagging"), pgx.NamedArgs{"limit": store.MaxLagging}).Query(appendTo(&st.Lagging, rowTo(scanStatus)))
	b.Queue(stmt("stats_oldest_parked")).Query(appendTo(&parked, rowTo(scanStatus)))
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return store.Stats{}, s.dbErr(ctx, "stats", err)
	}
	s.sealer.Open(st.Lagging)
	s.sealer.Open(parked)
	waiting, err := s.unnumbered(ctx, "")
	if err != nil {
		return store.Stats{}, err
	}
	for _, w := range waiting {
		st.Unnumbered.Records += w.Records
		st.Unnumbered.Streams++
		if o := st.Unnumbered.Oldest; o.IsZero() || w.Oldest.Before(o) {
			st.Unnumbered.Oldest = w.Oldest
		}
	}
	if len(parked) > 0 {
		st.OldestParked = &parked[0]
	}
	return st, nil
}

// scanStatus reads a status (sql/registrations.sql), then extra.
func scanStatus(row pgx.Row, extra ...any) (store.Status, error) {
	var (
		st                   store.Status
		r                    = &st.Registration
		parkedAt, leaseUntil pgtype.Timestamptz
		failingSince, paced  pgtype.Timestamptz
		retry, rate          string
	)
	err := row.Scan(append([]any{&r.Stream, &r.ID, &r.Namespace, &r.URL, (*[]byte)(&r.Config), &r.OnRejected, &r.NextSeq, &r.Attempts,
		&r.NextAttemptAt, &r.Parked, &parkedAt, &r.LastError, &r.LeaseOwner, &leaseUntil, &r.HostFailures, &r.Kinds, &r.Window,
		(*int64)(&r.RetainMax), &r.Subscription, &retry, &failingSince, &r.Paused, &rate, &paced, &st.Head, &st.Sealed}, extra...)...)
	if err == nil {
		r.Retry, err = store.DecodeRetry(retry)
	}
	if err == nil {
		r.Rate, err = store.DecodeRate(rate)
	}
	r.FailingSince, r.PacedUntil = timeOf(failingSince), timeOf(paced)
	if len(r.Kinds) == 0 {
		r.Kinds = nil // every kind, as the other stores return it
	}
	r.NextAttemptAt = r.NextAttemptAt.UTC()
	r.ParkedAt, r.LeaseUntil = timeOf(parkedAt), timeOf(leaseUntil)
	return st, err
}

// Due implements store.Store (package doc, "Idle costs nothing" and
// "Claiming and fencing"): a sequencer step, then one transaction of four
// round trips: begin, read the troubled hosts and lock the probes this
// claim owns; pick (pick), and count the other namespaces' due
// registrations; claim the picks; move the probes claimed, clear the idle
// streams' markers and commit. With nothing picked there is no claim.
func (s *Store) Due(ctx context.Context, q store.DueQuery) (store.DueBatch, error) {
	if err := cmp.Or(q.Validate(), journal.ValidateID("lease owner", q.Owner)); err != nil {
		return store.DueBatch{}, err
	}
	if s.sequencing.Load() == 0 {
		if _, err := s.sequence(ctx, nil, seqProbe, nil); err != nil {
			return store.DueBatch{}, err
		}
	}
	var batch store.DueBatch
	err := s.onConn(ctx, nil, "due", func(conn *pgx.Conn) error {
		var troubled, locked []store.Host
		b := &pgx.Batch{}
		b.Queue(stmt("begin"))
		queuePlanner(b)
		b.Queue(stmt("due_async_commit"))
		b.Queue(stmt("troubled_hosts")).Query(appendTo(&troubled, rowTo(scanHost)))
		b.Queue(stmt("lock_probes"), pgx.NamedArgs{"at": q.At}).Query(appendTo(&locked, rowTo(scanHost)))
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return s.dbErr(ctx, "due: read hosts", err)
		}
		hosts, probes := map[string]store.Host{}, map[string]bool{} // the troubled, with the probes this claim owns as locked
		held := []string{}
		for _, h := range troubled {
			hosts[h.Host] = h
		}
		for _, h := range locked {
			hosts[h.Host], probes[h.Host] = h, true
		}
		for _, h := range hosts {
			if !probes[h.Host] && h.State != store.HostUp {
				held = append(held, h.Host)
			}
		}
		streams, ids, err := s.pick(ctx, conn, q, held, probes, &batch.Unserved)
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			rows, err := conn.Query(ctx, stmt("claim"), pgx.NamedArgs{"namespace": q.Namespace, "at": q.At, "limit": q.Limit, "owner": q.Owner,
				"lease_until": q.LeaseUntil, "streams": streams, "ids": ids})
			if err == nil {
				batch.Registrations, err = pgx.AppendRows(batch.Registrations, rows, func(row pgx.CollectableRow) (store.Status, error) {
					var lapsed bool
					st, err := scanStatus(row, &lapsed)
					st.Lapsed = lapsed
					return st, err
				})
			}
			if err != nil {
				return s.dbErr(ctx, "due", err)
			}
		}
		batch.More = len(batch.Registrations) < len(ids) // a pick left: beyond Limit, or locked by another claim
		b = &pgx.Batch{}
		for _, st := range batch.Registrations { // report the claimed hosts, moving the probes claimed
			h, ok := hosts[st.Host()]
			if !ok {
				continue
			}
			delete(hosts, h.Host)
			if probes[h.Host] {
				h = h.Probed(q.At)
				b.Queue(stmt("move_probe"), pgx.NamedArgs{"host": h.Host, "probes": h.Probes, "next_probe_at": h.NextProbeAt})
				queueHeldTo(b, h, h)
			}
			batch.Hosts = append(batch.Hosts, h)
		}
		b.Queue(stmt("clear_candidates"))
		b.Queue(stmt("clear_pending"))
		b.Queue(stmt("commit"))
		return s.dbErr(ctx, "due: move probes, clear idle streams and commit", conn.SendBatch(ctx, b).Close())
	})
	if err != nil {
		return store.DueBatch{}, err
	}
	s.sealer.Open(batch.Registrations)
	return batch, nil
}

// pickDepth is how many due registrations of each cursor the first pick
// reads, per registration a claim may take: room for Run's per-host cap
// (4 of each host's 10 in a fediverse audience) and for rows that racing
// claims take first. A pick that read too few reads 8 times more.
const pickDepth = 4

// pick reads the due registrations of q.Namespace not held nor of a host
// at its cap (statement pick) and returns those a claim for q may take, in claim
// order: within q.HostRoom, of a host probed (probes) only its first. It
// counts the other namespaces' into *unserved if q.CountUnserved. statement pick
// reads the first depth of each cursor's registrations: the rows up to the
// first cursor's last one read are all it could have seen, and if fewer
// than q.Limit+1 of them fit, it reads again, deeper. So a claim reads what
// it takes and what the cap and held hosts leave, not every registration
// due.
func (s *Store) pick(ctx context.Context, conn *pgx.Conn, q store.DueQuery, held []string, probes map[string]bool,
	unserved *int) (streams, ids []string, err error) {
	const maxDepth = 1 << 30
	type cursor struct {
		stream string
		seq    int64
	}
	// The hosts at their cap are left out too: a claim at a turn's end does
	// not read every registration waiting for a busy host.
	skip := append(slices.Clip(held), store.HostsAtCap(q)...)
	depth := maxDepth
	if q.Limit < maxDepth/pickDepth {
		depth = pickDepth * (q.Limit + 1)
	}
	for first := true; ; first, depth = false, min(depth*8, maxDepth) {
		streams, ids = streams[:0], ids[:0]
		cut := false
		b := &pgx.Batch{}
		b.Queue(stmt("pick"), pgx.NamedArgs{"namespace": q.Namespace, "at": q.At, "held": skip, "depth": depth}).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			taken, read := map[string]int{}, map[cursor]int{}
			var (
				c        cursor
				id, host string
			)
			for !cut && rows.Next() {
				if err := rows.Scan(&c.stream, &c.seq, &id, &host); err != nil {
					return err
				}
				if room := q.HostRoom(host); (room < 0 || taken[host] < room) && (!probes[host] || taken[host] == 0) {
					taken[host]++
					streams, ids = append(streams, c.stream), append(ids, id)
				}
				read[c]++
				cut = read[c] == depth // rows past this one may come after some it did not read
			}
			return rows.Err()
		})
		if q.CountUnserved && first {
			b.Queue(stmt("unserved"), pgx.NamedArgs{"namespace": q.Namespace, "at": q.At, "held": held}).QueryRow(func(row pgx.Row) error { return row.Scan(unserved) })
		}
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return nil, nil, s.dbErr(ctx, "due: pick", err)
		}
		if !cut || len(ids) > q.Limit || depth == maxDepth {
			return streams, ids, nil
		}
	}
}

// Reseal implements store.Resealer: it reads a page, then writes the configs
// it sealed anew in one statement, each only where the row still holds what
// was read.
func (s *Store) Reseal(ctx context.Context, after store.Key, limit int) (store.ResealPage, error) {
	if limit < 1 {
		return store.ResealPage{}, journal.Invalid("limit", "is %d: it must be 1 or more", limit)
	}
	if !validKey(after.Stream, after.ID) {
		return store.ResealPage{}, journal.Invalid("after", "is not valid UTF-8 or holds a NUL byte")
	}
	type row struct {
		key    store.Key
		stored []byte
	}
	rows, err := query(ctx, s, "reseal: read", nil, func(r pgx.CollectableRow) (row, error) {
		var out row
		return out, r.Scan(&out.key.Stream, &out.key.ID, &out.stored)
	}, stmt("reseal_page"), pgx.NamedArgs{"after_stream": after.Stream, "after_id": after.ID, "limit": limit})
	if err != nil {
		return store.ResealPage{}, err
	}
	page := store.ResealPage{Read: len(rows), More: len(rows) == limit}
	var streams, ids []string
	var olds, news [][]byte
	for _, r := range rows {
		sealed, changed, err := s.sealer.Reseal(r.key, r.stored)
		if err != nil {
			return store.ResealPage{}, err
		}
		if changed {
			streams, ids, olds, news = append(streams, r.key.Stream), append(ids, r.key.ID), append(olds, r.stored), append(news, sealed)
		}
		page.Last = r.key
	}
	if len(streams) == 0 {
		return page, nil
	}
	tag, err := s.pool.Exec(ctx, stmt("reseal"), pgx.NamedArgs{"streams": streams, "ids": ids, "olds": olds, "news": news})
	if err != nil {
		return store.ResealPage{}, s.dbErr(ctx, "reseal", err)
	}
	page.Resealed = int(tag.RowsAffected())
	return page, nil
}
