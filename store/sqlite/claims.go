package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/heraldpush/herald/store"
)

// dueArgs checks a claim's query (Due, DueResends) and converts its
// instants for the statements.
func dueArgs(q store.DueQuery) (at, until sql.NullInt64, err error) {
	if err := q.Validate(); err != nil {
		return at, until, err
	}
	at, err = nanos("at", q.At)
	until, err2 := nanos("lease until", q.LeaseUntil)
	return at, until, cmp.Or(err, err2)
}

// Due implements store.Store in one write transaction, whose lock makes the
// claim atomic across processes: store.DuePicker picks what it claims, and
// the wake marker of every stream it read is recomputed (wakeMarker).
func (s *Store) Due(ctx context.Context, q store.DueQuery) (store.DueBatch, error) {
	at, until, err := dueArgs(q)
	if err != nil {
		return store.DueBatch{}, err
	}
	// Most sweeps of a quiet store find nothing: say so from a read
	// snapshot, without taking the write lock (or syncing a commit). An
	// append that commits after this read is one that came after the sweep.
	var woken bool
	if err := s.r.QueryRowContext(ctx, stmt("any_woken"), at.Int64).Scan(&woken); err != nil || !woken {
		return store.DueBatch{}, translate("due: look for woken streams", err)
	}
	var p *store.DuePicker
	err = s.write(ctx, "claim due registrations of "+q.Namespace, func(tx *sql.Tx) error {
		hosts := map[string]store.Host{}
		probing := false
		_, err := queryAll(ctx, tx, "due: read hosts", nil, func(sc scanner) (h store.Host, err error) {
			h, err = scanHost(sc)
			hosts[h.Host] = h
			_, probe := h.Holds(q.At)
			probing = probing || probe
			return h, err
		}, stmt("troubled_hosts"))
		if err != nil {
			return err
		}
		var streams []wokenStream
		var full bool
		p, streams, full, err = pickDue(ctx, tx, q, hosts, probing, at.Int64)
		if err != nil {
			return err
		}
		for _, h := range p.Probed {
			if err := s.putHost(ctx, tx, h, h); err != nil {
				return err
			}
			hosts[h.Host] = h
		}
		if q.CountUnserved {
			if err := tx.QueryRowContext(ctx, stmt("unserved"), at.Int64, q.Namespace).Scan(&p.Batch.Unserved); err != nil {
				return translate("due: count other namespaces", err)
			}
		}
		for i := range p.Batch.Registrations {
			st := &p.Batch.Registrations[i]
			if _, err := tx.ExecContext(ctx, stmt("claim"), q.Owner, until, at, st.Stream, st.ID); err != nil {
				return translate("due: claim", err)
			}
			st.Lapsed = st.LeaseOwner != "" // as read before the claim
			st.LeaseOwner, st.LeaseUntil, st.NextAttemptAt = q.Owner, instant(until), instant(at)
		}
		if !full || p.Capped || len(store.HostsAtCap(q)) > 0 {
			// Due registrations are left, or may be behind a host at its cap,
			// whose turns' ends claim again: the woken streams stay woken.
			return nil
		}
		// Every stream woken by now was read to its end above.
		held := heldHosts(hosts, q.At)
		for _, w := range streams {
			m, err := wakeMarker(ctx, tx, w, q.Namespace, held, at.Int64)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, stmt("set_wake"), m, w.stream); err != nil {
				return translate("due: set wake marker", err)
			}
		}
		return nil
	})
	if err != nil {
		return store.DueBatch{}, err
	}
	s.sealer.Open(p.Batch.Registrations)
	return p.Batch, nil
}

// scanHost scans host_columns, then extra.
func scanHost(sc scanner, extra ...any) (store.Host, error) {
	var (
		h                                       store.Host
		since, probeAt, failureAt, failingSince sql.NullInt64
	)
	err := sc.Scan(append([]any{&h.Host, &h.State, &since, &h.Failures, &h.Probes, &probeAt, &h.LastError, &failureAt, &failingSince}, extra...)...)
	h.Since, h.NextProbeAt, h.LastFailureAt, h.FailingSince = instant(since), instant(probeAt), instant(failureAt), instant(failingSince)
	return h, err
}

// scanListedHost scans a row of the hosts statement: a host and its scheme.
func scanListedHost(sc scanner) (store.Host, error) {
	var (
		scheme   string
		schemeAt sql.NullInt64
	)
	h, err := scanHost(sc, &scheme, &schemeAt)
	h.Scheme, h.SchemeAt = scheme, instant(schemeAt)
	return h, err
}

// pickDepth is how many due registrations of each cursor the first pick
// reads, per registration a claim may take, when the per-host cap or
// a probe may pass rows over: room for Run's cap (4 of each host's 10 in a
// fediverse audience). A pick that read too few reads 8 times more.
const pickDepth = 4

// candidate is a due registration as sqlDueOfStream reads it.
type candidate struct {
	next       sql.NullInt64 // next_attempt_at: NULL (never tried) first
	stream, id string
	host       string
	last       bool // the last row read of its cursor, which has more
}

// claimOrder is Due's: oldest next_attempt_at first (NULL before any), then
// by key.
func claimOrder(a, b candidate) int {
	switch {
	case a.next.Valid != b.next.Valid:
		if !a.next.Valid {
			return -1
		}
		return 1
	case a.next.Int64 != b.next.Int64:
		return cmp.Compare(a.next.Int64, b.next.Int64)
	}
	return cmp.Or(cmp.Compare(a.stream, b.stream), cmp.Compare(a.id, b.id))
}

// wokenStream is a woken stream as pickDue read it: its head and its
// lagging cursors (where unparked registrations wait), lowest first.
type wokenStream struct {
	stream  string
	head    int64
	cursors []int64
}

// pickDue offers a picker for q the due registrations of the woken streams
// in claim order, then reads the picks whole. It reads the first depth of
// each cursor's (statements next_cursor, due_of_cursor), merges them, and
// offers them up to the first cursor's last row read (later rows may come after
// ones it did not read); if fewer than q.Limit+1 of those fit, it reads
// again, deeper. So a claim reads what it takes and what the cap and
// probes pass over, not every registration due, nor those at the head
// (issue 37). It returns the woken streams; full says every due
// registration was offered.
func pickDue(ctx context.Context, tx *sql.Tx, q store.DueQuery, hosts map[string]store.Host, probing bool, at int64) (p *store.DuePicker, streams []wokenStream, full bool, err error) {
	streams, err = queryAll(ctx, tx, "due: read woken streams", nil, func(sc scanner) (w wokenStream, err error) {
		return w, sc.Scan(&w.stream, &w.head)
	}, stmt("woken"), at)
	if err != nil {
		return nil, nil, false, err
	}
	for i := range streams {
		w := &streams[i]
		for cursor := int64(0); ; {
			var next sql.NullInt64
			if err := tx.QueryRowContext(ctx, stmt("next_cursor"), w.stream, cursor, w.head).Scan(&next); err != nil {
				return nil, nil, false, translate("due: next cursor", err)
			}
			if !next.Valid {
				break
			}
			cursor = next.Int64
			w.cursors = append(w.cursors, cursor)
		}
	}
	atCap, err := json.Marshal(append([]string{}, store.HostsAtCap(q)...)) // [] for none, not null
	if err != nil {
		return nil, nil, false, fmt.Errorf("sqlite: due: hosts at their cap: %w", err)
	}
	const maxDepth = 1 << 30
	depth := maxDepth
	if q.Limit < maxDepth/pickDepth {
		depth = q.Limit + 1 // each offered row is taken: none passed over
		if q.MaxPerHost > 0 || probing {
			depth *= pickDepth
		}
	}
	var cands []candidate
	for ; ; depth = min(depth*8, maxDepth) {
		cands = cands[:0]
		for _, w := range streams {
			for _, cursor := range w.cursors {
				n := len(cands)
				cands, err = queryAll(ctx, tx, "due", cands, func(sc scanner) (c candidate, err error) {
					c.stream = w.stream
					return c, sc.Scan(&c.id, &c.host, &c.next)
				}, stmt("due_of_cursor"), w.stream, q.Namespace, at, cursor, depth, string(atCap))
				if err != nil {
					return nil, nil, false, err
				}
				if len(cands)-n == depth {
					cands[len(cands)-1].last = true
				}
			}
		}
		slices.SortFunc(cands, claimOrder)
		p = store.NewDuePicker(q, maps.Clone(hosts)) // Offer moves a probed host's next probe
		cut := false
		full = true
		for _, c := range cands {
			if !p.Offer(store.Status{Registration: store.Registration{Stream: c.stream, ID: c.id}}, c.host) {
				full = false
				break
			}
			if c.last {
				cut, full = true, false
				break
			}
		}
		if !cut || p.Batch.More || depth == maxDepth {
			break
		}
	}
	for i, pick := range p.Batch.Registrations {
		if p.Batch.Registrations[i], err = getStatus(ctx, tx, pick.Stream, pick.ID); err != nil {
			return nil, nil, false, err
		}
	}
	return p, streams, full, nil
}

// getHost reads one host; found is false when none is stored.
func getHost(ctx context.Context, q queryer, host string) (h store.Host, found bool, err error) {
	h, err = scanHost(q.QueryRowContext(ctx, stmt("get_host"), host))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Host{Host: host}, false, nil
	}
	return h, err == nil, translate("read host", err)
}

// putHost stores h and appends the event of its change from old, if any.
func (s *Store) putHost(ctx context.Context, tx *sql.Tx, old, h store.Host) error {
	since, err1 := nanos("host since", h.Since)
	probe, err2 := nanos("next probe at", h.NextProbeAt)
	failed, err3 := nanos("last failure at", h.LastFailureAt)
	failing, err4 := nanos("failing since", h.FailingSince)
	if err := cmp.Or(err1, err2, err3, err4); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, stmt("put_host"), h.Host, h.State, since, h.Failures, h.Probes, probe, h.LastError, failed, failing)
	if err != nil {
		return translate("write host", err)
	}
	switch hold, from, to := h.HeldTo(old); {
	case hold:
		_, err = tx.ExecContext(ctx, stmt("hold_host"), h.Host, to.UnixNano())
	case !to.IsZero():
		_, err = tx.ExecContext(ctx, stmt("release_host"), h.Host, from.UnixNano(), to.UnixNano())
	}
	if err != nil {
		return translate("move the host's registrations", err)
	}
	e, ok := store.HostEvent(old, h)
	return s.event(ctx, tx, e, ok)
}

// HostFailed implements store.HostStore.
func (s *Store) HostFailed(ctx context.Context, f store.HostFailure) (store.Host, error) {
	if err := f.Validate(); err != nil {
		return store.Host{}, err
	}
	var h store.Host
	c := f.Claim
	err := s.fenced(ctx, "record host failure", c, f.NextSeq, func(tx *sql.Tx, fc fence) error {
		old, _, err := getHost(ctx, tx, f.Host)
		if err != nil {
			return err
		}
		h = old.Failed(f.Evidence, f.Horizon)
		ev, failures := store.ChargeHost(c.Stream, c.ID, f.Evidence, uint64(fc.n), uint64(fc.next), fc.hostFailures)
		nb, err := nanos("not before", ev.NotBefore)
		if err != nil {
			return err
		}
		if _, err := update(ctx, tx, "record host failure", c.Stream, c.ID, stmt("host_failed"), c.Stream, c.ID, c.Owner, fc.n, nb, ev.Clean().Error, failures); err != nil {
			return err
		}
		if err := addEvidence(ctx, tx, c.Stream, c.ID, ev); err != nil {
			return err
		}
		return s.putHost(ctx, tx, old, h) // after the registration's own next attempt: a hold moves it too
	})
	return h, err
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
	if err := store.ValidateHost(host); err != nil {
		return store.Host{}, err
	}
	if _, err := instantArg("at", at); err != nil {
		return store.Host{}, err
	}
	var h store.Host
	err := s.write(ctx, "record an answer of "+host, func(tx *sql.Tx) error {
		old, found, err := getHost(ctx, tx, host)
		if err == nil {
			h, err = store.Answer(host, old, found, mustExist, at)
		}
		if err != nil || !found || h == old {
			return err
		}
		if err := s.putHost(ctx, tx, old, h); err != nil || old.State == store.HostUp {
			return err
		}
		// Released: wake every stream the host's registrations follow, so
		// that the next Due reads them (it recomputes the markers).
		_, err = tx.ExecContext(ctx, stmt("wake_host_streams"), int64(dueNow), host)
		return translate("wake the host's streams", err)
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
	var out []store.Host
	err = s.read(ctx, "list hosts", func(tx *sql.Tx) error {
		out, err = queryAll(ctx, tx, "list hosts", nil, scanListedHost, stmt("hosts"), q.Host, q.State, q.After, limit)
		if err != nil || len(out) == 0 {
			return err
		}
		held := map[string]int{}
		_, err = queryAll(ctx, tx, "count held registrations", nil, func(sc scanner) (n int, err error) {
			var host string
			err = sc.Scan(&host, &n)
			held[host] = n
			return n, err
		}, stmt("held"))
		for i := range out {
			out[i].Held = held[out[i].Host]
		}
		return err
	})
	return out, err
}

// HostScheme implements store.HostSchemes.
func (s *Store) HostScheme(ctx context.Context, host string) (scheme string, at time.Time, err error) {
	if err := store.ValidateHost(host); err != nil {
		return "", time.Time{}, err
	}
	var n sql.NullInt64
	err = s.r.QueryRowContext(ctx, stmt("host_scheme"), host).Scan(&scheme, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, translate("read the signature scheme of "+host, err)
	}
	return scheme, instant(n), nil
}

// SetHostScheme implements store.HostSchemes.
func (s *Store) SetHostScheme(ctx context.Context, host, scheme string, at time.Time) error {
	if err := store.CheckHostScheme(host, scheme, at); err != nil {
		return err
	}
	n, err := instantArg("at", at)
	if err != nil {
		return err
	}
	return s.write(ctx, "store the signature scheme of "+host, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, stmt("set_host_scheme"), host, scheme, n)
		return translate("store the signature scheme of "+host, err)
	})
}
