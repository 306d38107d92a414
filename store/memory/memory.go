// Package memory is an in-memory herald store: a journal.Journal and a
// push.Store in one value, for unit tests, examples and dry runs. Nothing
// survives the process. It is safe for concurrent use and passes
// store/storetest like every other store.
package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

var (
	_ journal.Journal = (*Store)(nil)
	_ push.Store      = (*Store)(nil)
)

// Store keeps the journal and the registrations in maps behind one mutex.
// The zero value is not usable; call New.
type Store struct {
	mu         sync.Mutex
	now        func() time.Time
	maxPayload int
	streams    map[string]*stream
	ids        map[string]ref
	regs       map[push.Key]*push.Registration
	evidence   map[push.Key][]push.Evidence
}

type stream struct {
	records []journal.Record // records[i].Seq == i+1
	sealed  bool
}

type ref struct {
	stream string
	seq    uint64
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that stamps Record.AppendedAt (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithMaxPayload sets the payload limit in bytes (default
// journal.DefaultMaxPayload).
func WithMaxPayload(n int) Option { return func(s *Store) { s.maxPayload = n } }

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		now:        time.Now,
		maxPayload: journal.DefaultMaxPayload,
		streams:    map[string]*stream{},
		ids:        map[string]ref{},
		regs:       map[push.Key]*push.Registration{},
		evidence:   map[push.Key][]push.Evidence{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Append implements journal.Journal.
func (s *Store) Append(ctx context.Context, name string, entries ...journal.Entry) ([]journal.Record, error) {
	entries, err := journal.ValidateEntries(name, entries, s.maxPayload)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[name]
	if st == nil {
		st = &stream{}
	}
	// Check everything before writing anything: a batch is all-or-nothing.
	out := make([]journal.Record, len(entries))
	fresh := make([]int, 0, len(entries))
	for i, e := range entries {
		if r, ok := s.ids[e.ID]; ok {
			stored := s.streams[r.stream].records[r.seq-1]
			if err := journal.Same(stored, name, e); err != nil {
				return nil, err
			}
			out[i] = clone(stored)
			continue
		}
		fresh = append(fresh, i)
	}
	if len(fresh) > 0 && st.sealed {
		return nil, &journal.SealedError{Stream: name, FinalSeq: uint64(len(st.records))}
	}
	at := s.now().UTC()
	for _, i := range fresh {
		e := entries[i]
		rec := journal.Record{Stream: name, Seq: uint64(len(st.records)) + 1, ID: e.ID, Kind: e.Kind,
			ContentType: e.ContentType, Payload: slices.Clone(e.Payload), Final: e.Final, AppendedAt: at}
		if rec.Payload == nil {
			rec.Payload = []byte{}
		}
		st.records = append(st.records, rec)
		st.sealed = st.sealed || e.Final
		s.ids[e.ID] = ref{stream: name, seq: rec.Seq}
		out[i] = clone(rec)
	}
	s.streams[name] = st
	return out, nil
}

// Read implements journal.Journal.
func (s *Store) Read(ctx context.Context, name string, fromSeq uint64, limit int) ([]journal.Record, error) {
	if err := journal.ValidateRead(name, fromSeq, limit); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[name]
	if st == nil || fromSeq > uint64(len(st.records)) {
		return []journal.Record{}, nil
	}
	page := st.records[fromSeq-1:]
	page = page[:min(len(page), limit)]
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
	return s.head(name), nil
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
		return journal.Record{}, fmt.Errorf("record %q: %w", id, journal.ErrNotFound)
	}
	return clone(s.streams[r.stream].records[r.seq-1]), nil
}

func (s *Store) head(name string) uint64 {
	if st := s.streams[name]; st != nil {
		return uint64(len(st.records))
	}
	return 0
}

func (s *Store) sealed(name string) bool {
	st := s.streams[name]
	return st != nil && st.sealed
}

func clone(r journal.Record) journal.Record {
	r.Payload = slices.Clone(r.Payload)
	return r
}

// Register implements push.Store.
func (s *Store) Register(ctx context.Context, r push.Registration) (push.Registration, error) {
	if err := r.Validate(); err != nil {
		return push.Registration{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := r.Key()
	if old := s.regs[k]; old != nil {
		old.URL, old.Namespace, old.Config, old.OnRejected = r.URL, r.Namespace, slices.Clone(r.Config), r.OnRejected
		return copyReg(old), nil
	}
	next, head := max(r.NextSeq, 1), s.head(r.Stream)
	if s.sealed(r.Stream) && next > head {
		return push.Registration{}, fmt.Errorf("register %s/%s at #%d: %w", r.Stream, r.ID, next,
			&journal.SealedError{Stream: r.Stream, FinalSeq: head})
	}
	if err := push.ValidateCursor(next, head); err != nil {
		return push.Registration{}, err
	}
	n := &push.Registration{Stream: r.Stream, ID: r.ID, Namespace: r.Namespace, URL: r.URL,
		Config: slices.Clone(r.Config), OnRejected: r.OnRejected, NextSeq: next}
	s.regs[k] = n
	return copyReg(n), nil
}

// Unregister implements push.Store.
func (s *Store) Unregister(ctx context.Context, streamName, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := push.Key{Stream: streamName, ID: id}
	if s.regs[k] == nil {
		return notFound(streamName, id)
	}
	delete(s.regs, k)
	delete(s.evidence, k)
	return nil
}

// Get implements push.Store.
func (s *Store) Get(ctx context.Context, streamName, id string) (push.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.regs[push.Key{Stream: streamName, ID: id}]
	if r == nil {
		return push.Status{}, notFound(streamName, id)
	}
	return s.status(r), nil
}

// List implements push.Store.
func (s *Store) List(ctx context.Context, q push.ListQuery) ([]push.Status, error) {
	limit, err := push.ListLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []push.Status
	for _, r := range s.regs {
		st := s.status(r)
		if (q.Stream != "" && r.Stream != q.Stream) || (q.Namespace != "" && r.Namespace != q.Namespace) ||
			(q.Parked && !r.Parked) || (q.Lagging && st.Lag() == 0) || !push.After(r.Key(), q.After) {
			continue
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b push.Status) int { return push.CompareKeys(a.Key(), b.Key()) })
	return out[:min(len(out), limit)], nil
}

// Due implements push.Store.
func (s *Store) Due(ctx context.Context, q push.DueQuery) (push.DueBatch, error) {
	if err := q.Validate(); err != nil {
		return push.DueBatch{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []*push.Registration
	var batch push.DueBatch
	for _, r := range s.regs {
		if r.Parked || r.LeaseUntil.After(q.At) || r.NextAttemptAt.After(q.At) || r.NextSeq > s.head(r.Stream) {
			continue
		}
		if r.Namespace != q.Namespace {
			batch.Unserved++
			continue
		}
		due = append(due, r)
	}
	slices.SortFunc(due, func(a, b *push.Registration) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), push.CompareKeys(a.Key(), b.Key()))
	})
	taken := map[string]int{} // per host, for the cap
	claim := due[:0]
	for _, r := range due {
		h := r.Host()
		if room := q.HostRoom(h); room >= 0 && taken[h] >= room {
			continue // the cap leaves it for later: not claimed, not More
		}
		if len(claim) == q.Limit {
			batch.More = true
			break
		}
		taken[h]++
		claim = append(claim, r)
	}
	for _, r := range claim {
		r.LeaseOwner, r.LeaseUntil, r.NextAttemptAt = q.Owner, q.LeaseUntil, q.At
		batch.Registrations = append(batch.Registrations, s.status(r))
	}
	return batch, nil
}

// Advance implements push.Store.
func (s *Store) Advance(ctx context.Context, c push.Claim, nextSeq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.claimed(c, nextSeq)
	if err != nil {
		return err
	}
	if nextSeq > r.NextSeq {
		r.NextSeq, r.Attempts, r.LastError = nextSeq, 0, ""
	}
	r.LeaseOwner, r.LeaseUntil = "", time.Time{}
	return nil
}

// Retry implements push.Store.
func (s *Store) Retry(ctx context.Context, c push.Claim, nextSeq uint64, notBefore time.Time, ev push.Evidence) error {
	if err := push.ValidateInstant("not before", notBefore); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.fail(c, nextSeq, ev)
	if err != nil {
		return err
	}
	r.NextAttemptAt = notBefore
	return nil
}

// Park implements push.Store.
func (s *Store) Park(ctx context.Context, c push.Claim, nextSeq uint64, ev push.Evidence) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.fail(c, nextSeq, ev)
	if err != nil {
		return err
	}
	r.Parked, r.ParkedAt = true, ev.At
	return nil
}

// claimed returns the registration c holds, checking the cursor it saves.
// The caller holds s.mu.
func (s *Store) claimed(c push.Claim, nextSeq uint64) (*push.Registration, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	r := s.regs[push.Key{Stream: c.Stream, ID: c.ID}]
	if r == nil {
		return nil, notFound(c.Stream, c.ID)
	}
	if r.LeaseOwner != c.Owner {
		return nil, fmt.Errorf("registration %s/%s, claim %s: %w", c.Stream, c.ID, c.Owner, push.ErrLeaseLost)
	}
	if err := push.ValidateCursor(nextSeq, s.head(c.Stream)); err != nil {
		return nil, err
	}
	return r, nil
}

// fail applies what Retry and Park share. The caller holds s.mu.
func (s *Store) fail(c push.Claim, nextSeq uint64, ev push.Evidence) (*push.Registration, error) {
	if err := push.ValidateInstant("evidence at", ev.At); err != nil {
		return nil, err
	}
	r, err := s.claimed(c, nextSeq)
	if err != nil {
		return nil, err
	}
	if nextSeq > r.NextSeq {
		r.NextSeq, r.Attempts = nextSeq, 0
	}
	r.Attempts++
	r.LastError = ev.Error
	r.LeaseOwner, r.LeaseUntil = "", time.Time{}
	s.addEvidence(r.Key(), ev)
	return r, nil
}

// Unpark implements push.Store.
func (s *Store) Unpark(ctx context.Context, streamName, id string, at time.Time) error {
	if err := push.ValidateInstant("at", at); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := push.Key{Stream: streamName, ID: id}
	r := s.regs[k]
	if r == nil {
		return notFound(streamName, id)
	}
	if !r.Parked {
		return nil
	}
	r.Parked, r.ParkedAt, r.Attempts, r.NextAttemptAt = false, time.Time{}, 0, at
	r.LeaseOwner, r.LeaseUntil = "", time.Time{}
	s.addEvidence(k, push.Evidence{At: at, Event: push.EventUnparked, Seq: r.NextSeq})
	return nil
}

// Complete implements push.Store.
func (s *Store) Complete(ctx context.Context, c push.Claim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.claimed(c, 1)
	if err != nil {
		return err
	}
	delete(s.regs, r.Key())
	delete(s.evidence, r.Key())
	return nil
}

// Skip implements push.Store.
func (s *Store) Skip(ctx context.Context, streamName, id string, toSeq uint64, at time.Time, reason string) error {
	if err := push.ValidateInstant("at", at); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := push.Key{Stream: streamName, ID: id}
	r := s.regs[k]
	if r == nil {
		return notFound(streamName, id)
	}
	if err := push.ValidateSkip(r.NextSeq, s.head(streamName), toSeq); err != nil {
		return err
	}
	s.move(k, r, toSeq, at, push.EventSkip, reason)
	return nil
}

// Rewind implements push.Store.
func (s *Store) Rewind(ctx context.Context, streamName, id string, toSeq uint64, at time.Time) error {
	if err := push.ValidateInstant("at", at); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := push.Key{Stream: streamName, ID: id}
	r := s.regs[k]
	if r == nil {
		return notFound(streamName, id)
	}
	if err := push.ValidateRewind(s.head(streamName), toSeq); err != nil {
		return err
	}
	s.move(k, r, toSeq, at, push.EventRewind, fmt.Sprintf("rewound from #%d", r.NextSeq))
	return nil
}

func (s *Store) move(k push.Key, r *push.Registration, toSeq uint64, at time.Time, event, reason string) {
	s.addEvidence(k, push.Evidence{At: at, Event: event, Seq: r.NextSeq, Error: reason})
	r.NextSeq, r.Attempts, r.NextAttemptAt, r.LastError = toSeq, 0, at, ""
	r.LeaseOwner, r.LeaseUntil = "", time.Time{} // fence out a turn in flight
}

// AddEvidence implements push.Store.
func (s *Store) AddEvidence(ctx context.Context, ev push.Evidence) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := push.Key{Stream: ev.Stream, ID: ev.Registration}
	if s.regs[k] == nil {
		return notFound(ev.Stream, ev.Registration)
	}
	s.addEvidence(k, ev)
	return nil
}

func (s *Store) addEvidence(k push.Key, ev push.Evidence) {
	ev = ev.Clean()
	ev.Stream, ev.Registration = k.Stream, k.ID
	list := append(s.evidence[k], ev)
	if len(list) > push.MaxEvidence {
		list = slices.Clone(list[len(list)-push.MaxEvidence:])
	}
	s.evidence[k] = list
}

// Evidence implements push.Store.
func (s *Store) Evidence(ctx context.Context, streamName, id string, limit int) ([]push.Evidence, error) {
	if limit < 0 {
		return nil, journal.Invalid("limit", "is %d: it must not be negative", limit)
	}
	if limit == 0 || limit > push.MaxEvidence {
		limit = push.MaxEvidence
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := push.Key{Stream: streamName, ID: id}
	if s.regs[k] == nil {
		return nil, notFound(streamName, id)
	}
	list := s.evidence[k]
	out := make([]push.Evidence, 0, min(limit, len(list)))
	for i := len(list) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, list[i])
	}
	return out, nil
}

// Stats implements push.Store.
func (s *Store) Stats(ctx context.Context, at time.Time) (push.Stats, error) {
	s.mu.Lock()
	all := make([]push.Status, 0, len(s.regs))
	for _, r := range s.regs {
		all = append(all, s.status(r))
	}
	s.mu.Unlock()
	return push.Summarize(all, at), nil
}

func (s *Store) status(r *push.Registration) push.Status {
	return push.Status{Registration: copyReg(r), Head: s.head(r.Stream), Sealed: s.sealed(r.Stream)}
}

func copyReg(r *push.Registration) push.Registration {
	c := *r
	c.Config = slices.Clone(r.Config)
	return c
}

func notFound(streamName, id string) error {
	return fmt.Errorf("registration %s/%s: %w", streamName, id, journal.ErrNotFound)
}
