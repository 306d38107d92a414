// Package memory is an in-memory herald store: a journal.Journal and a
// store.Store in one value, for unit tests, examples and dry runs. Nothing
// survives the process. It is safe for concurrent use and passes
// store/storetest like every other store.
package memory

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

var _ store.Backend = (*Store)(nil)

// Store keeps the journal and the registrations in maps behind one mutex,
// tokens and actor keys too: a memory store serves tests and one process,
// where a token check waiting behind an append costs nothing worth a
// second lock. The zero value is not usable; call New.
type Store struct {
	mu        sync.Mutex
	now       func() time.Time
	streams   map[string]*stream
	ids       map[string]ref
	regs      map[store.Key]*store.Registration
	evidence  map[store.Key][]store.Evidence
	hosts     map[string]store.Host
	schemes   map[string]hostScheme             // by host; only of hosts in hosts
	tokens    map[string]store.Token            // by id
	actorKeys map[string]store.ActorKey         // by id; kept as given: a memory store has no file to leak
	subs      map[store.Key]*store.Subscription // by (prefix, id)
	resends   map[store.Key]map[uint64]*pending // pending resends, by registration and seq
}

// pending is a pending resend (Store.Resend) and its lease.
type pending struct {
	at, until time.Time
	by, owner string
}

type stream struct {
	records []journal.Record // the retained run: records[i].Seq == oldest+i
	oldest  uint64           // the low-water mark: seq of records[0], head+1 when none is retained
	head    uint64
	sealed  bool
}

// at returns retained record seq.
func (st *stream) at(seq uint64) journal.Record { return st.records[seq-st.oldest] }

type ref struct {
	stream string
	seq    uint64
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that stamps Record.AppendedAt (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		now:       time.Now,
		streams:   map[string]*stream{},
		ids:       map[string]ref{},
		regs:      map[store.Key]*store.Registration{},
		evidence:  map[store.Key][]store.Evidence{},
		hosts:     map[string]store.Host{},
		subs:      map[store.Key]*store.Subscription{},
		schemes:   map[string]hostScheme{},
		resends:   map[store.Key]map[uint64]*pending{},
		tokens:    map[string]store.Token{},
		actorKeys: map[string]store.ActorKey{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Append implements journal.Journal.
func (s *Store) Append(ctx context.Context, name string, entries ...journal.Entry) ([]journal.Record, error) {
	entries, err := journal.ValidateEntries(name, journal.WithContextTrace(ctx, entries), journal.DefaultMaxPayload)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appendLocked(name, entries)
}

// event appends one of herald's operational events (store.RegistrationEvent,
// store.HostEvent) under the lock of the change it reports. The caller holds
// s.mu.
func (s *Store) event(e journal.Entry, ok bool) {
	if !ok {
		return
	}
	if _, err := s.appendLocked(store.EventsStream, []journal.Entry{e}); err != nil {
		panic("memory: an operational event was refused: " + err.Error()) // never sealed, ids derived: cannot happen
	}
}

// appendLocked appends validated entries. The caller holds s.mu.
func (s *Store) appendLocked(name string, entries []journal.Entry) ([]journal.Record, error) {
	st := s.stream(name)
	// Check everything before writing anything: a batch is all-or-nothing.
	out := make([]journal.Record, len(entries))
	fresh := make([]int, 0, len(entries))
	for i, e := range entries {
		if r, ok := s.ids[e.ID]; ok {
			stored := s.streams[r.stream].at(r.seq)
			if err := journal.Same(stored, name, e); err != nil {
				return nil, err
			}
			out[i] = clone(stored)
			continue
		}
		fresh = append(fresh, i)
	}
	if len(fresh) > 0 && st.sealed {
		return nil, &journal.SealedError{Stream: name, FinalSeq: st.head}
	}
	at := s.now().UTC()
	for _, i := range fresh {
		e := entries[i]
		st.head++
		rec := journal.Record{Stream: name, Seq: st.head, ID: e.ID, Kind: e.Kind,
			ContentType: e.ContentType, Payload: slices.Clone(e.Payload), Final: e.Final, AppendedAt: at,
			Traceparent: e.Traceparent, Tracestate: e.Tracestate}
		if rec.Payload == nil {
			rec.Payload = []byte{}
		}
		st.records = append(st.records, rec)
		st.sealed = st.sealed || e.Final
		s.ids[e.ID] = ref{stream: name, seq: rec.Seq}
		out[i] = clone(rec)
	}
	if s.streams[name] == nil {
		s.streams[name] = st
		s.materialise(name) // the stream's row is created: its subscriptions follow it from its first record
	}
	return out, nil
}

// Read implements journal.Journal.
func (s *Store) Read(ctx context.Context, name string, fromSeq uint64, limit, maxBytes int) ([]journal.Record, error) {
	if err := journal.ValidateRead(name, fromSeq, limit, maxBytes); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[name]
	if st == nil || fromSeq > st.head {
		return []journal.Record{}, nil
	}
	page := st.records[max(fromSeq, st.oldest)-st.oldest:]
	page = page[:journal.PageEnd(page, limit, maxBytes)]
	out := make([]journal.Record, len(page))
	for i, r := range page {
		out[i] = clone(r)
	}
	return out, nil
}

// Head implements journal.Journal.
func (s *Store) Head(ctx context.Context, name string) (uint64, error) {
	if err := journal.ValidateStream(name); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream(name).head, nil
}

// Lookup implements journal.Journal.
func (s *Store) Lookup(ctx context.Context, id string) (journal.Record, error) {
	if err := journal.ValidateID("id", id); err != nil {
		return journal.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.ids[id]
	if !ok {
		return journal.Record{}, store.RecordNotFound(id)
	}
	return clone(s.streams[r.stream].at(r.seq)), nil
}

// stream returns the named stream, or a new one (not stored) if it has no
// row.
func (s *Store) stream(name string) *stream {
	if st := s.streams[name]; st != nil {
		return st
	}
	return &stream{oldest: 1}
}

func clone(r journal.Record) journal.Record {
	r.Payload = slices.Clone(r.Payload)
	return r
}

// Register implements store.Store.
func (s *Store) Register(ctx context.Context, r store.Registration) (store.Registration, error) {
	return s.register(r, nil)
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, r, was store.Registration) (store.Registration, error) {
	return s.register(r, &was)
}

// register is Register, or Update if was is set.
func (s *Store) register(r store.Registration, was *store.Registration) (store.Registration, error) {
	if err := r.Validate(); err != nil {
		return store.Registration{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.regs[r.Key()]
	if n != nil && n.Subscription != "" {
		return store.Registration{}, store.MadeBy(r, n.Subscription)
	}
	if was != nil {
		if err := store.CheckUpdate(r, *was, n, nil); err != nil {
			return store.Registration{}, err
		}
	}
	if n == nil { // a new one; an update keeps the cursor and retry state
		st := s.stream(r.Stream)
		next, err := store.FirstCursor(r, st.head, st.oldest, st.sealed)
		if err != nil {
			return store.Registration{}, err
		}
		n = &store.Registration{Stream: r.Stream, ID: r.ID, NextSeq: next}
		s.regs[r.Key()] = n
	}
	moveHost(n, r.URL)
	if !r.SameDelivery(*n) {
		n.LeaseOwner = "" // a turn in flight loses its lease, whose end still holds it (Store.Register)
	}
	n.URL, n.Namespace, n.Config, n.OnRejected = r.URL, r.Namespace, slices.Clone(r.Config), r.OnRejected
	n.Kinds, n.Window, n.RetainMax = slices.Clone(r.Kinds), max(r.Window, 1), r.RetainMax
	removed := !n.Rate.IsZero() && r.Rate.IsZero()
	n.Retry, n.Rate = r.Retry, r.Rate
	n.Retry.Schedule = slices.Clone(r.Retry.Schedule)
	if removed && !n.PacedUntil.IsZero() { // the rate removed: its pace too (Store.Register)
		if n.NextAttemptAt.Equal(n.PacedUntil) {
			n.NextAttemptAt = time.Time{}
		}
		n.PacedUntil = time.Time{}
	}
	return copyReg(n), nil
}

// moveHost drops what r's old host held when url is on another host:
// HostFailures 0, and due at once if it waited for that host (Store.Register).
func moveHost(r *store.Registration, url string) {
	if store.HostOf(url) == r.Host() {
		return
	}
	if r.HostFailures > 0 {
		r.NextAttemptAt = time.Time{}
	}
	r.HostFailures = 0
}

// with runs fn under s.mu on registration stream/id.
func (s *Store) with(stream, id string, fn func(r *store.Registration) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.regs[store.Key{Stream: stream, ID: id}]
	if r == nil {
		return store.NotFound(stream, id)
	}
	return fn(r)
}

// under is with for the registration claim c holds, once nextSeq is checked
// as a cursor of its stream.
func (s *Store) under(c store.Claim, nextSeq uint64, fn func(r *store.Registration) error) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return s.with(c.Stream, c.ID, func(r *store.Registration) error {
		if r.LeaseOwner != c.Owner {
			return c.LeaseLost()
		}
		if err := store.ValidateCursor(nextSeq, s.stream(c.Stream).head); err != nil {
			return err
		}
		return fn(r)
	})
}

// Unregister implements store.Store.
func (s *Store) Unregister(ctx context.Context, streamName, id string) error {
	return s.with(streamName, id, func(r *store.Registration) error {
		s.remove(r.Key())
		return nil
	})
}

// remove deletes registration k with its evidence and pending resends. The
// caller holds s.mu.
func (s *Store) remove(k store.Key) {
	delete(s.regs, k)
	delete(s.evidence, k)
	delete(s.resends, k)
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, streamName, id string) (st store.Status, err error) {
	err = s.with(streamName, id, func(r *store.Registration) error {
		st = s.status(r)
		return nil
	})
	return st, err
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, q store.ListQuery) ([]store.Status, error) {
	limit, err := store.ListLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Status
	for _, r := range s.regs {
		st := s.status(r)
		if (q.Stream != "" && r.Stream != q.Stream) || (q.Namespace != "" && r.Namespace != q.Namespace) ||
			(q.Subscription != "" && (r.Subscription != q.Subscription || q.ID != "" && r.ID != q.ID)) ||
			(q.Parked && !r.Parked) || (q.Lagging && st.Lag() == 0) || (q.After != store.Key{} && store.CompareKeys(r.Key(), q.After) <= 0) {
			continue
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b store.Status) int { return store.CompareKeys(a.Key(), b.Key()) })
	return out[:min(len(out), limit)], nil
}

// Due implements store.Store; store.DuePicker picks what it claims.
func (s *Store) Due(ctx context.Context, q store.DueQuery) (store.DueBatch, error) {
	if err := q.Validate(); err != nil {
		return store.DueBatch{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := store.NewDuePicker(q, maps.Clone(s.hosts))
	var due []*store.Registration
	for _, r := range s.regs {
		if r.Parked || r.LeaseUntil.After(q.At) || r.NextAttemptAt.After(q.At) || r.NextSeq > s.stream(r.Stream).head {
			continue
		}
		if r.Namespace == q.Namespace {
			due = append(due, r)
		} else if held, probe := s.hosts[r.Host()].Holds(q.At); q.CountUnserved && (!held || probe) {
			p.Batch.Unserved++
		}
	}
	slices.SortFunc(due, func(a, b *store.Registration) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), store.CompareKeys(a.Key(), b.Key()))
	})
	for _, r := range due {
		if !p.Offer(s.status(r), r.Host()) {
			break
		}
	}
	for _, h := range p.Probed {
		s.putHost(h, h)
	}
	for i, st := range p.Batch.Registrations {
		r := s.regs[st.Key()]
		lapsed := r.LeaseOwner != ""
		r.LeaseOwner, r.LeaseUntil, r.NextAttemptAt = q.Owner, q.LeaseUntil, q.At
		p.Batch.Registrations[i] = s.status(r)
		p.Batch.Registrations[i].Lapsed = lapsed
	}
	return p.Batch, nil
}

// Advance implements store.Store.
func (s *Store) Advance(ctx context.Context, c store.Claim, nextSeq uint64) error {
	return s.save(c, nextSeq, true)
}

// Checkpoint implements store.Store: Advance's cursor move, the lease kept.
func (s *Store) Checkpoint(ctx context.Context, c store.Claim, nextSeq uint64) error {
	return s.save(c, nextSeq, false)
}

// save moves the cursor c holds forward to nextSeq, releasing the lease if
// asked.
func (s *Store) save(c store.Claim, nextSeq uint64, release bool) error {
	return s.under(c, nextSeq, func(r *store.Registration) error {
		if nextSeq > r.NextSeq {
			r.NextSeq, r.Attempts, r.HostFailures, r.LastError = nextSeq, 0, 0, ""
		}
		if release {
			r.LeaseOwner, r.LeaseUntil = "", time.Time{}
		}
		return nil
	})
}

// Pace implements store.Store.
func (s *Store) Pace(ctx context.Context, c store.Claim, until time.Time) error {
	if err := store.ValidateInstant("paced until", until); err != nil {
		return err
	}
	return s.under(c, 1, func(r *store.Registration) error {
		r.PacedUntil = until
		if until.After(r.NextAttemptAt) {
			r.NextAttemptAt = until
		}
		return nil
	})
}

// Renew implements store.Store.
func (s *Store) Renew(ctx context.Context, until time.Time, claims []store.Claim) ([]store.Claim, error) {
	if err := store.ValidateRenew(until, claims); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var renewed []store.Claim
	for _, c := range claims {
		if r := s.regs[store.Key{Stream: c.Stream, ID: c.ID}]; r != nil && r.LeaseOwner == c.Owner {
			r.LeaseUntil = until
			renewed = append(renewed, c)
		}
	}
	return renewed, nil
}

// Retry implements store.Store.
func (s *Store) Retry(ctx context.Context, c store.Claim, nextSeq uint64, notBefore time.Time, ev store.Evidence) error {
	if err := store.ValidateInstant("not before", notBefore); err != nil {
		return err
	}
	return s.fail(c, nextSeq, ev, false, func(r *store.Registration) { r.NextAttemptAt = notBefore })
}

// Park implements store.Store.
func (s *Store) Park(ctx context.Context, c store.Claim, nextSeq uint64, ev store.Evidence) error {
	return s.fail(c, nextSeq, ev, false, func(r *store.Registration) {
		r.Parked, r.ParkedAt = true, ev.At
		s.event(store.RegistrationEvent(store.KindParked, *r, r.NextSeq, "", ev.Error, ev.At))
	})
}

// fail ends the turn c holds with a failure, at cursor nextSeq, then applies
// then: an attempt charged (Retry, Park), or none but a host-level failure
// counted (HostFailed).
func (s *Store) fail(c store.Claim, nextSeq uint64, ev store.Evidence, hostLevel bool, then func(r *store.Registration)) error {
	if err := store.ValidateInstant("evidence at", ev.At); err != nil {
		return err
	}
	return s.under(c, nextSeq, func(r *store.Registration) error {
		if nextSeq > r.NextSeq {
			r.NextSeq, r.Attempts, r.HostFailures = nextSeq, 0, 0
		}
		if hostLevel {
			ev, r.HostFailures = store.ChargeHost(r.Stream, r.ID, ev, nextSeq, r.NextSeq, r.HostFailures)
			r.NextAttemptAt = ev.NotBefore
			if r.PacedUntil.After(r.NextAttemptAt) {
				r.NextAttemptAt = r.PacedUntil // store.HostStore.HostFailed
			}
		} else {
			if r.Attempts == 0 { // a run of failures starts
				r.FailingSince = ev.At
			}
			r.Attempts++
			r.HostFailures = 0 // the host answered about the record
		}
		r.LastError, r.LeaseOwner, r.LeaseUntil = ev.Error, "", time.Time{}
		s.addEvidence(r.Key(), ev)
		then(r)
		return nil
	})
}

// Unpark implements store.Store.
func (s *Store) Unpark(ctx context.Context, streamName, id string, at time.Time) error {
	if err := store.ValidateInstant("at", at); err != nil {
		return err
	}
	return s.with(streamName, id, func(r *store.Registration) error {
		if r.Parked && !r.Paused { // a pause ends with Resume
			r.Parked, r.ParkedAt, r.Attempts, r.HostFailures, r.NextAttemptAt = false, time.Time{}, 0, 0, at
			r.LeaseOwner, r.LeaseUntil = "", time.Time{}
			s.addEvidence(r.Key(), store.Evidence{At: at, Event: store.EventUnparked, Seq: r.NextSeq})
			s.event(store.RegistrationEvent(store.KindUnparked, *r, r.NextSeq, "", "", at))
		}
		return nil
	})
}

// Pause implements store.Store.
func (s *Store) Pause(ctx context.Context, streamName, id string, at time.Time, by, reason string) error {
	if err := cmp.Or(store.ValidateInstant("at", at), store.ValidatePause(by, reason)); err != nil {
		return err
	}
	return s.with(streamName, id, func(r *store.Registration) error {
		if r.Paused {
			return nil
		}
		why := store.PauseText(by, reason)
		r.Parked, r.Paused, r.ParkedAt, r.LastError, r.LeaseOwner, r.LeaseUntil = true, true, at, why, "", time.Time{}
		s.addEvidence(r.Key(), store.Evidence{At: at, Event: store.EventPaused, Seq: r.NextSeq, Error: why})
		s.event(store.RegistrationEvent(store.KindPaused, *r, r.NextSeq, by, reason, at))
		return nil
	})
}

// Resume implements store.Store.
func (s *Store) Resume(ctx context.Context, streamName, id string, at time.Time, by string) error {
	if err := cmp.Or(store.ValidateInstant("at", at), store.ValidatePause(by, "")); err != nil {
		return err
	}
	return s.with(streamName, id, func(r *store.Registration) error {
		if !r.Paused {
			return nil
		}
		r.Parked, r.Paused, r.ParkedAt, r.Attempts, r.HostFailures, r.NextAttemptAt = false, false, time.Time{}, 0, 0, at
		r.LastError, r.LeaseOwner, r.LeaseUntil = "", "", time.Time{}
		s.addEvidence(r.Key(), store.Evidence{At: at, Event: store.EventResumed, Seq: r.NextSeq, Error: "resumed by " + by})
		s.event(store.RegistrationEvent(store.KindResumed, *r, r.NextSeq, by, "", at))
		return nil
	})
}

// Resend implements store.Store.
func (s *Store) Resend(ctx context.Context, streamName, id string, seq uint64, at time.Time, by string) (queued bool, err error) {
	if err := cmp.Or(store.ValidateInstant("at", at), store.ValidatePause(by, "")); err != nil {
		return false, err
	}
	err = s.with(streamName, id, func(r *store.Registration) error {
		st := s.stream(streamName)
		kind := ""
		if seq >= st.oldest && seq <= st.head {
			kind = st.at(seq).Kind
		}
		if err := store.CheckResend(streamName, seq, r.NextSeq, st.oldest, r.Kinds, kind); err != nil {
			return err
		}
		k := r.Key()
		if s.resends[k][seq] != nil {
			return nil
		}
		if s.resends[k] == nil {
			s.resends[k] = map[uint64]*pending{}
		}
		s.resends[k][seq] = &pending{at: at, by: by}
		s.event(store.RegistrationEvent(store.KindResend, *r, seq, by, "", at))
		queued = true
		return nil
	})
	return queued, err
}

// DueResends implements store.Store.
func (s *Store) DueResends(ctx context.Context, q store.DueQuery) (store.ResendBatch, error) {
	if err := q.Validate(); err != nil {
		return store.ResendBatch{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []store.Resend
	for k, ps := range s.resends {
		r := s.regs[k]
		if r.Namespace != q.Namespace {
			continue
		}
		for seq, p := range ps {
			if !p.until.After(q.At) {
				due = append(due, store.Resend{Registration: copyReg(r), Seq: seq, At: p.at, By: p.by})
			}
		}
	}
	slices.SortFunc(due, func(a, b store.Resend) int {
		return cmp.Or(a.At.Compare(b.At), store.CompareKeys(a.Registration.Key(), b.Registration.Key()), cmp.Compare(a.Seq, b.Seq))
	})
	batch := store.ResendBatch{Resends: due[:min(len(due), q.Limit)], More: len(due) > q.Limit}
	for i := range batch.Resends {
		rs := &batch.Resends[i]
		p := s.resends[rs.Registration.Key()][rs.Seq]
		p.owner, p.until, rs.Owner = q.Owner, q.LeaseUntil, q.Owner
	}
	return batch, nil
}

// RenewResends implements store.Store.
func (s *Store) RenewResends(ctx context.Context, until time.Time, claims []store.ResendClaim) ([]store.ResendClaim, error) {
	if err := store.ValidateRenew(until, claims); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var renewed []store.ResendClaim
	for _, c := range claims {
		if p := s.resends[store.Key{Stream: c.Stream, ID: c.ID}][c.Seq]; p != nil && p.owner == c.Owner {
			p.until = until
			renewed = append(renewed, c)
		}
	}
	return renewed, nil
}

// Resent implements store.Store.
func (s *Store) Resent(ctx context.Context, c store.ResendClaim, ev store.Evidence) error {
	if err := cmp.Or(c.Validate(), store.ValidateInstant("evidence at", ev.At)); err != nil {
		return err
	}
	return s.with(c.Stream, c.ID, func(r *store.Registration) error {
		k := r.Key()
		if p := s.resends[k][c.Seq]; p == nil || p.owner != c.Owner {
			return c.LeaseLost()
		}
		delete(s.resends[k], c.Seq)
		if len(s.resends[k]) == 0 {
			delete(s.resends, k)
		}
		ev.Event, ev.Seq = store.EventResent, c.Seq
		s.addEvidence(k, ev)
		return nil
	})
}

// Complete implements store.Store.
func (s *Store) Complete(ctx context.Context, c store.Claim) error {
	return s.under(c, 1, func(r *store.Registration) error {
		s.remove(r.Key())
		s.event(store.RegistrationEvent(store.KindCompleted, *r, s.stream(r.Stream).head+1, "", "", r.NextAttemptAt))
		return nil
	})
}

// Skip implements store.Store.
func (s *Store) Skip(ctx context.Context, streamName, id string, toSeq uint64, at time.Time, reason string) error {
	return s.move(streamName, id, toSeq, at, true, reason)
}

// Rewind implements store.Store.
func (s *Store) Rewind(ctx context.Context, streamName, id string, toSeq uint64, at time.Time) error {
	return s.move(streamName, id, toSeq, at, false, "")
}

// move is an operator's skip or rewind (store.CheckMove); it fences out a
// turn in flight.
func (s *Store) move(streamName, id string, toSeq uint64, at time.Time, skip bool, reason string) error {
	if err := store.ValidateInstant("at", at); err != nil {
		return err
	}
	return s.with(streamName, id, func(r *store.Registration) error {
		st := s.stream(streamName)
		ev, err := store.CheckMove(skip, streamName, r.NextSeq, st.head, st.oldest, toSeq, at, reason)
		if err != nil {
			return err
		}
		s.addEvidence(r.Key(), ev)
		r.NextSeq, r.Attempts, r.HostFailures, r.NextAttemptAt, r.LastError = toSeq, 0, 0, at, ""
		r.LeaseOwner, r.LeaseUntil = "", time.Time{}
		if skip {
			s.event(store.RegistrationEvent(store.KindSkipped, *r, toSeq, store.ByOperator, reason, at))
		}
		return nil
	})
}

// AddEvidence implements store.Store.
func (s *Store) AddEvidence(ctx context.Context, ev store.Evidence) error {
	return s.with(ev.Stream, ev.Registration, func(r *store.Registration) error {
		s.addEvidence(r.Key(), ev)
		if ev.Event == store.EventSkipped {
			s.event(store.RegistrationEvent(store.KindSkipped, *r, ev.Seq, store.ByPolicy, ev.Error, ev.At))
		}
		return nil
	})
}

func (s *Store) addEvidence(k store.Key, ev store.Evidence) {
	ev = ev.Clean()
	ev.Stream, ev.Registration = k.Stream, k.ID
	list := append(s.evidence[k], ev)
	if len(list) > store.MaxEvidence {
		list = slices.Clone(list[len(list)-store.MaxEvidence:])
	}
	s.evidence[k] = list
}

// Evidence implements store.Store.
func (s *Store) Evidence(ctx context.Context, streamName, id string, limit int) ([]store.Evidence, error) {
	limit, err := store.EvidenceLimit(limit)
	if err != nil {
		return nil, err
	}
	var out []store.Evidence
	err = s.with(streamName, id, func(r *store.Registration) error {
		list := s.evidence[r.Key()]
		out = append([]store.Evidence{}, list[max(0, len(list)-limit):]...)
		slices.Reverse(out) // newest first
		return nil
	})
	return out, err
}

// Stats implements store.Store.
func (s *Store) Stats(ctx context.Context, at time.Time) (store.Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := store.Stats{Namespaces: map[string]store.NamespaceStats{}}
	for _, r := range s.regs {
		rs := s.status(r)
		n := st.Namespaces[r.Namespace]
		switch rs.State() {
		case store.StatePaused:
			n.Paused++
		case store.StateParked:
			n.Parked++
			if st.OldestParked == nil || rs.ParkedAt.Before(st.OldestParked.ParkedAt) {
				st.OldestParked = &rs
			}
		case store.StateIdle:
			n.Idle++
		case store.StateRetrying:
			n.Retrying++
		default:
			n.Ready++
		}
		if rs.LeaseUntil.After(at) {
			n.Leased++
		}
		n.Behind += rs.Lag()
		st.Namespaces[r.Namespace] = n
		if rs.Lag() > 0 {
			st.Lagging = append(st.Lagging, rs)
		}
	}
	slices.SortFunc(st.Lagging, func(a, b store.Status) int {
		return cmp.Or(cmp.Compare(b.Lag(), a.Lag()), store.CompareKeys(a.Key(), b.Key()))
	})
	st.Lagging = st.Lagging[:min(len(st.Lagging), store.MaxLagging)]
	return st, nil
}

// HostFailed implements store.HostStore.
func (s *Store) HostFailed(ctx context.Context, f store.HostFailure) (h store.Host, err error) {
	if err := f.Validate(); err != nil {
		return store.Host{}, err
	}
	err = s.fail(f.Claim, f.NextSeq, f.Evidence, true, func(*store.Registration) {
		old, ok := s.hosts[f.Host]
		if !ok {
			old = store.Host{Host: f.Host}
		}
		h = old.Failed(f.Evidence, f.Horizon)
		s.putHost(old, h)
	})
	return h, err
}

// HostAnswered implements store.HostStore.
func (s *Store) HostAnswered(ctx context.Context, host string, at time.Time) (store.Host, error) {
	return s.answered(host, at, false)
}

// ResetHost implements store.HostStore.
func (s *Store) ResetHost(ctx context.Context, host string, at time.Time) (store.Host, error) {
	return s.answered(host, at, true)
}

func (s *Store) answered(host string, at time.Time, mustExist bool) (store.Host, error) {
	if err := store.ValidateHost(host); err != nil {
		return store.Host{}, err
	}
	if err := store.ValidateInstant("at", at); err != nil {
		return store.Host{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, found := s.hosts[host]
	h, err := store.Answer(host, old, found, mustExist, at)
	if err == nil && found {
		s.putHost(old, h)
	}
	return h, err
}

// putHost stores h, moves its registrations' next attempts as
// store.Host.HeldTo says, and tells the change from old. The caller holds
// s.mu.
func (s *Store) putHost(old, h store.Host) {
	s.hosts[h.Host] = h
	hold, from, to := h.HeldTo(old)
	for _, r := range s.regs {
		switch {
		case r.Parked || r.Host() != h.Host:
		case hold && r.NextAttemptAt.Before(to):
			r.NextAttemptAt = to
		case !hold && !to.IsZero() && r.NextAttemptAt.Equal(from):
			r.NextAttemptAt = to
		}
	}
	s.event(store.HostEvent(old, h))
}

// hostScheme is a host's signature scheme and when it was learned.
type hostScheme struct {
	scheme string
	at     time.Time
}

// HostScheme implements store.HostSchemes.
func (s *Store) HostScheme(ctx context.Context, host string) (string, time.Time, error) {
	if err := store.ValidateHost(host); err != nil {
		return "", time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := s.schemes[host]
	return hs.scheme, hs.at, nil
}

// SetHostScheme implements store.HostSchemes.
func (s *Store) SetHostScheme(ctx context.Context, host, scheme string, at time.Time) error {
	if err := store.CheckHostScheme(host, scheme, at); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.hosts[host]; !ok {
		s.hosts[host] = store.Host{Host: host, State: store.HostUp, Since: at.UTC()}
	}
	s.schemes[host] = hostScheme{scheme: scheme, at: at.UTC()}
	return nil
}

// Hosts implements store.HostStore.
func (s *Store) Hosts(ctx context.Context, q store.HostQuery) ([]store.Host, error) {
	limit, err := q.Validate()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	held := map[string]int{}
	for _, r := range s.regs {
		if h, ok := s.hosts[r.Host()]; ok && h.State != store.HostUp && !r.Parked && r.NextSeq <= s.stream(r.Stream).head {
			held[h.Host]++
		}
	}
	var out []store.Host
	for name, h := range s.hosts {
		if (q.Host != "" && name != q.Host) || (q.State != "" && h.State != q.State) || (q.After != "" && name <= q.After) {
			continue
		}
		h.Held = held[name]
		h.Scheme, h.SchemeAt = s.schemes[name].scheme, s.schemes[name].at
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b store.Host) int { return cmp.Compare(a.Host, b.Host) })
	return out[:min(len(out), limit)], nil
}

func (s *Store) status(r *store.Registration) store.Status {
	st := s.stream(r.Stream)
	return store.Status{Registration: copyReg(r), Head: st.head, Sealed: st.sealed}
}

func copyReg(r *store.Registration) store.Registration {
	c := *r
	c.Config = slices.Clone(r.Config)
	c.Kinds = slices.Clone(r.Kinds)
	c.Retry.Schedule = slices.Clone(r.Retry.Schedule)
	return c
}

// Prune implements store.Retention, visiting streams in name order.
func (s *Store) Prune(ctx context.Context, q store.PruneQuery) (store.PruneReport, error) {
	q, err := q.Validate()
	if err != nil {
		return store.PruneReport{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cutoff := q.Cutoff()
	holders := map[string][]store.Holder{} // per stream, its registrations' holds
	for k, r := range s.regs {
		holders[k.Stream] = append(holders[k.Stream], store.Holder{NextSeq: r.NextSeq, RetainMax: r.RetainBound()})
	}
	var rep store.PruneReport
	expired := map[string]uint64{} // streams whose low-water mark rose, to where
	for _, name := range slices.Sorted(maps.Keys(s.streams)) {
		st := s.streams[name]
		_, registered := holders[name]
		holds := q.Holds(holders[name])
		to := st.oldest // the new low-water mark
		for to <= st.head && rep.Records < q.Limit {
			rec := st.at(to)
			if !holds.Prunable(to, rec.AppendedAt) {
				break
			}
			rep.Records++
			rep.Bytes += int64(len(rec.Payload))
			to++
		}
		if to > st.oldest {
			rep.Streams++
			if !q.DryRun {
				for _, rec := range st.records[:to-st.oldest] {
					delete(s.ids, rec.ID)
				}
				st.records = slices.Clone(st.records[to-st.oldest:])
				st.oldest = to
				expired[name] = to
			}
		}
		if st.sealed && !registered && to > st.head {
			rep.Removed++
			if !q.DryRun {
				delete(s.streams, name)
			}
		}
		if rep.Records == q.Limit {
			rep.More = true
			break
		}
	}
	for k, evs := range s.evidence {
		reason := -1 // a parked registration keeps its newest parked row (evs is oldest first)
		for i, ev := range evs {
			if r := s.regs[k]; ev.Event == store.EventParked && r != nil && r.Parked {
				reason = i
			}
		}
		keep := evs[:0:0]
		for i, ev := range evs {
			if ev.At.After(cutoff) || i == reason {
				keep = append(keep, ev)
			}
		}
		rep.Evidence += len(evs) - len(keep)
		if !q.DryRun {
			s.evidence[k] = keep
		}
	}
	for _, name := range slices.Sorted(maps.Keys(expired)) { // after the evidence rule, which would take rows of q.At with Retain 0
		s.expire(name, expired[name], q.At)
	}
	if !rep.More {
		rep.Hosts = s.pruneHosts(cutoff, q.DryRun)
	}
	return rep, nil
}

// expire moves the cursors of stream's registrations below its new low-water
// mark to it (store.Expired). The caller holds s.mu.
func (s *Store) expire(stream string, to uint64, at time.Time) {
	for _, k := range slices.SortedFunc(maps.Keys(s.regs), store.CompareKeys) {
		r := s.regs[k]
		if k.Stream != stream || r.NextSeq >= to {
			continue
		}
		ev, e, ok := store.Expired(*r, to, at)
		s.addEvidence(k, ev)
		s.event(e, ok)
		r.NextSeq, r.Attempts, r.HostFailures, r.LastError = to, 0, 0, ev.Error
	}
}

// pruneHosts removes the hosts no registration is of whose last failure
// (else Since) is at or before cutoff, and returns how many; dry, none.
func (s *Store) pruneHosts(cutoff time.Time, dry bool) int {
	used := map[string]bool{}
	for _, r := range s.regs {
		used[r.Host()] = true
	}
	n := 0
	for name, h := range s.hosts {
		if last := cmp.Or(h.LastFailureAt, h.Since); !used[name] && !last.After(cutoff) {
			n++
			if !dry {
				delete(s.hosts, name)
				delete(s.schemes, name)
			}
		}
	}
	return n
}

// Streams implements store.Retention.
func (s *Store) Streams(ctx context.Context, q store.StreamQuery) ([]store.StreamInfo, error) {
	limit, err := q.Validate()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	regs := map[string]int{}
	for k := range s.regs {
		regs[k.Stream]++
	}
	out := []store.StreamInfo{}
	for _, name := range slices.Sorted(maps.Keys(s.streams)) {
		if (q.Stream != "" && name != q.Stream) || (q.After != "" && name <= q.After) {
			continue
		}
		st := s.streams[name]
		info := store.StreamInfo{Stream: name, Head: st.head, OldestSeq: st.oldest, Registrations: regs[name]}.Fill(st.sealed)
		for _, r := range st.records {
			info.Bytes += int64(len(r.Payload))
		}
		out = append(out, info)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// materialise creates the registrations of the subscriptions whose prefix
// stream is under, at the stream's oldest record, where none of that key
// exists. The caller holds s.mu.
func (s *Store) materialise(stream string) {
	for k, sub := range s.subs {
		if strings.HasPrefix(stream, k.Stream) {
			s.materialiseAt(sub, stream, s.stream(stream).oldest)
		}
	}
}

// materialiseAt creates sub's registration on stream at next, unless one of
// its key exists, and reports whether it did. The caller holds s.mu.
func (s *Store) materialiseAt(sub *store.Subscription, stream string, next uint64) bool {
	r := sub.Template(stream)
	if s.regs[r.Key()] != nil {
		return false
	}
	r.NextSeq, r.Window = next, max(r.Window, 1)
	r.Config, r.Kinds = slices.Clone(r.Config), slices.Clone(r.Kinds)
	r.Retry.Schedule = slices.Clone(r.Retry.Schedule)
	s.regs[r.Key()] = &r
	return true
}

// Subscribe implements store.Subscriber.
func (s *Store) Subscribe(ctx context.Context, sub, was store.Subscription) (store.SubscriptionStatus, error) {
	if err := sub.Validate(); err != nil {
		return store.SubscriptionStatus{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := store.Key{Stream: sub.Prefix, ID: sub.ID}
	if err := store.CheckSubscribe(sub, was, s.subs[k], nil); err != nil {
		return store.SubscriptionStatus{}, err
	}
	sub.Config, sub.Kinds, sub.Window = slices.Clone(sub.Config), slices.Clone(sub.Kinds), max(sub.Window, 1)
	changed := true
	if old := s.subs[k]; old != nil {
		sub.FromHead = old.FromHead // where existing streams started is history
		changed = !sub.Template("").SameDelivery(old.Template(""))
	}
	s.subs[k] = &sub
	for name, st := range s.streams {
		if !strings.HasPrefix(name, sub.Prefix) || sub.FromHead && st.sealed {
			continue
		}
		next := st.oldest
		if sub.FromHead {
			next = st.head + 1
		}
		s.materialiseAt(&sub, name, next)
	}
	n := 0
	for _, r := range s.regs {
		if r.Subscription == sub.Prefix && r.ID == sub.ID {
			n++
			if changed {
				r.LeaseOwner = "" // as Register
			}
			moveHost(r, sub.URL)
			r.Namespace, r.URL, r.Config, r.OnRejected = sub.Namespace, sub.URL, slices.Clone(sub.Config), sub.OnRejected
			r.Kinds, r.Window, r.RetainMax = slices.Clone(sub.Kinds), sub.Window, sub.RetainMax
			r.Retry = sub.Retry
			r.Retry.Schedule = slices.Clone(sub.Retry.Schedule)
		}
	}
	return store.SubscriptionStatus{Subscription: copySub(&sub), Streams: n}, nil
}

// Unsubscribe implements store.Subscriber.
func (s *Store) Unsubscribe(ctx context.Context, prefix, id string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := store.Key{Stream: prefix, ID: id}
	if s.subs[k] == nil {
		return 0, store.SubscriptionNotFound(prefix, id)
	}
	delete(s.subs, k)
	n := 0
	for rk, r := range s.regs {
		if r.Subscription == prefix && r.ID == id {
			s.remove(rk)
			n++
		}
	}
	return n, nil
}

// Subscriptions implements store.Subscriber.
func (s *Store) Subscriptions(ctx context.Context, prefix string) ([]store.SubscriptionStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	count := map[store.Key]int{}
	for _, r := range s.regs {
		if r.Subscription != "" {
			count[store.Key{Stream: r.Subscription, ID: r.ID}]++
		}
	}
	out := []store.SubscriptionStatus{}
	for _, k := range slices.SortedFunc(maps.Keys(s.subs), store.CompareKeys) {
		if prefix == "" || k.Stream == prefix {
			out = append(out, store.SubscriptionStatus{Subscription: copySub(s.subs[k]), Streams: count[k]})
		}
	}
	return out, nil
}

func copySub(sub *store.Subscription) store.Subscription {
	c := *sub
	c.Config, c.Kinds = slices.Clone(sub.Config), slices.Clone(sub.Kinds)
	c.Retry.Schedule = slices.Clone(sub.Retry.Schedule)
	return c
}
