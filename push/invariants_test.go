package push_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// One test per invariant of README.md, "Delivery semantics", named after
// its number; invariants 4 and 9 are the stores' (store/postgres,
// store/storetest).

// Invariant 1: a cursor advances past seq N only after every message of
// record N was accepted, or the projection produced none.
func TestInvariant1NoLoss(t *testing.T) {
	f := newFixture(t)
	f.proj.messages = func(rec journal.Record, _ push.Registration) ([]push.Message, error) {
		switch rec.Seq {
		case 2: // nothing for this receiver
			return nil, nil
		case 3: // two messages
			return []push.Message{{ID: rec.ID + "/a"}, {ID: rec.ID + "/b"}}, nil
		}
		return []push.Message{{ID: rec.ID}}, nil
	}
	f.recv.answer = func(_ push.Registration, msg push.Message, n int) push.Outcome {
		if msg.ID == "s#3/b" && n == 1 {
			return unavailable()
		}
		return accepted()
	}
	f.append("s", 4)
	f.register("s", "r")
	w := f.worker()

	rep := f.sweep(w, at(0))
	require.Equal(t, push.SweepReport{Registrations: 1, Records: 2, Deliveries: 2, Retries: 1}, rep)
	st := f.get("s", "r")
	require.Equal(t, uint64(3), st.NextSeq, "record 3 is not acknowledged while one of its messages failed")
	require.Equal(t, 1, st.Attempts)

	f.sweep(w, st.NextAttemptAt)
	require.Equal(t, []string{"s#1", "s#3/a", "s#3/b", "s#3/a", "s#3/b", "s#4"}, f.recv.ids("s/r"),
		"record 2 had no message; record 3 is resent whole, then 4 follows")
	require.Equal(t, uint64(5), f.get("s", "r").NextSeq)
}

// failingStore makes chosen store writes fail, like a crash between a POST
// and the cursor write.
type failingStore struct {
	*memory.Store
	failAdvance func(nextSeq uint64) bool
}

var errInjected = errors.New("injected: database went away")

func (s *failingStore) Advance(ctx context.Context, c store.Claim, nextSeq uint64) error {
	if s.failAdvance != nil && s.failAdvance(nextSeq) {
		return errInjected
	}
	return s.Store.Advance(ctx, c, nextSeq)
}

// Checkpoint is a cursor write too: failAdvance fails it as well.
func (s *failingStore) Checkpoint(ctx context.Context, c store.Claim, nextSeq uint64) error {
	if s.failAdvance != nil && s.failAdvance(nextSeq) {
		return errInjected
	}
	return s.Store.Checkpoint(ctx, c, nextSeq)
}

// Invariant 2: a lost cursor write repeats at most one page, with the same
// message ids.
func TestInvariant2BoundedDuplicates(t *testing.T) {
	f := newFixture(t)
	fs := &failingStore{Store: f.store}
	failed := false
	fs.failAdvance = func(uint64) bool {
		if failed {
			return false
		}
		failed = true
		return true
	}
	f.append("s", 10)
	f.register("s", "r")
	w := f.build(fs, fs, f.recv, f.proj, push.WithDrainPage(4))

	rep, err := w.RunOnce(t.Context(), at(0), 10)
	require.ErrorIs(t, err, errInjected, "the store error is returned")
	require.Equal(t, 1, rep.Errors)
	require.Equal(t, uint64(1), f.get("s", "r").NextSeq, "the cursor write was lost")
	require.Zero(t, f.get("s", "r").Attempts, "a store error is never blamed on the receiver")

	// The lease taken by the failed turn expires; then the page is repeated.
	for i := 0; f.get("s", "r").NextSeq <= 10; i++ {
		require.Less(t, i, 10, "the backlog drains")
		f.sweep(w, at(60+i))
	}
	got := f.recv.ids("s/r")
	require.Equal(t, append(seqIDs("s", 1, 4), seqIDs("s", 1, 10)...), got,
		"exactly the unfinished page (4 records) is repeated, with the same ids")
}

// Invariant 3: within one registration, record N+1 is never sent before N
// was acknowledged; registrations are independent.
func TestInvariant3Order(t *testing.T) {
	f := newFixture(t)
	rng := rand.New(rand.NewPCG(7, 11))
	var mu sync.Mutex
	f.recv.answer = func(reg push.Registration, _ push.Message, _ int) push.Outcome {
		if reg.ID == "down" {
			return unavailable()
		}
		mu.Lock()
		defer mu.Unlock()
		if rng.IntN(3) == 0 {
			return unavailable()
		}
		return accepted()
	}
	f.append("s", 30)
	for _, id := range []string{"a", "b", "c", "down"} {
		f.register("s", id)
	}
	w := f.worker(push.WithDrainPage(5), push.WithMaxAttempts(1000))
	for i := 0; i < 400; i++ {
		f.sweep(w, at(i*300))
	}
	for _, id := range []string{"a", "b", "c"} {
		require.Equal(t, uint64(31), f.get("s", id).NextSeq, "%s caught up although 'down' never answered", id)
		// The sequence sent is in order, each record resent only until it was acknowledged.
		var last int
		for _, msgID := range f.recv.ids("s/" + id) {
			var n int
			_, err := fmt.Sscanf(msgID, "s#%d", &n)
			require.NoError(t, err)
			require.True(t, n == last || n == last+1, "%s: %s sent after #%d", id, msgID, last)
			last = n
		}
		require.Equal(t, 30, last)
	}
	require.Equal(t, uint64(1), f.get("s", "down").NextSeq)
}

// Invariant 5: two workers racing never move a cursor backwards, and lose
// nothing.
func TestInvariant5MonotonicCursors(t *testing.T) {
	f := newFixture(t)
	f.append("s", 40)
	for i := range 10 {
		f.register("s", fmt.Sprintf("r%d", i))
	}
	// Record every cursor write each worker makes, and check it against the
	// cursor stored right after.
	mon := &monitorStore{Store: f.store}
	w1 := f.build(mon, mon, f.recv, f.proj, push.WithOwner("w1"), push.WithDrainPage(3), push.WithMaxInFlight(4))
	w2 := f.build(mon, mon, f.recv, f.proj, push.WithOwner("w2"), push.WithDrainPage(7), push.WithMaxInFlight(4))

	// w2's instants run a lease ahead of w1's, so w2 claims what w1 holds:
	// the worst case, two workers on the same registration at once.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() { _, err := w1.RunOnce(t.Context(), at(i), 5); require.NoError(t, err) })
		wg.Go(func() { _, err := w2.RunOnce(t.Context(), at(i+61), 5); require.NoError(t, err) })
		wg.Wait()
	}
	for i := range 10 {
		id := fmt.Sprintf("r%d", i)
		require.Equal(t, uint64(41), f.get("s", id).NextSeq, "%s delivered everything", id)
		seen := map[string]bool{}
		for _, m := range f.recv.ids("s/" + id) {
			seen[m] = true
		}
		require.Len(t, seen, 40, "every record of %s reached the receiver", id)
	}
	require.Empty(t, mon.backwards(), "no cursor moved backwards")
}

type monitorStore struct {
	*memory.Store
	mu   sync.Mutex
	back []string
	max  map[string]uint64
}

func (m *monitorStore) Advance(ctx context.Context, c store.Claim, nextSeq uint64) error {
	if err := m.Store.Advance(ctx, c, nextSeq); err != nil {
		return err
	}
	return m.check(ctx, c)
}

func (m *monitorStore) Checkpoint(ctx context.Context, c store.Claim, nextSeq uint64) error {
	if err := m.Store.Checkpoint(ctx, c, nextSeq); err != nil {
		return err
	}
	return m.check(ctx, c)
}

// check records the cursor stored after a write, and whether it went back.
func (m *monitorStore) check(ctx context.Context, c store.Claim) error {
	st, err := m.Store.Get(ctx, c.Stream, c.ID)
	if err != nil {
		return err
	}
	id := c.ID
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.max == nil {
		m.max = map[string]uint64{}
	}
	if st.NextSeq < m.max[id] {
		m.back = append(m.back, fmt.Sprintf("%s: cursor %d after %d", id, st.NextSeq, m.max[id]))
	}
	m.max[id] = max(m.max[id], st.NextSeq)
	return nil
}

func (m *monitorStore) backwards() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.back
}

// Invariant 6: parking keeps the cursor; unpark resumes at the first
// unacknowledged record.
func TestInvariant6ParkKeepsCursor(t *testing.T) {
	f := newFixture(t)
	gone := true
	f.recv.answer = func(_ push.Registration, msg push.Message, _ int) push.Outcome {
		if msg.ID == "s#3" && gone {
			return push.Outcome{Verdict: push.Permanent, Status: 410, Reason: "410 Gone", Body: []byte("this inbox is gone")}
		}
		return accepted()
	}
	f.append("s", 5)
	f.register("s", "r")
	w := f.worker()
	rep := f.sweep(w, at(0))
	require.Equal(t, 1, rep.Parked)
	require.True(t, rep.NeedsAttention())
	st := f.get("s", "r")
	require.True(t, st.Parked)
	require.Equal(t, uint64(3), st.NextSeq, "records 1 and 2 were acknowledged; 3 was not")
	require.Equal(t, "410 Gone", st.LastError)
	ev := f.evidence("s", "r")[0]
	require.Equal(t, store.EventParked, ev.Event)
	require.Equal(t, 410, ev.Status)
	require.Equal(t, "this inbox is gone", ev.Body)
	require.Equal(t, uint64(3), ev.Seq)

	require.Zero(t, f.sweep(w, at(100000)).Registrations, "a parked registration is not swept")

	gone = false
	require.NoError(t, f.store.Unpark(t.Context(), "s", "r", at(200000)))
	f.sweep(w, at(200000))
	require.Equal(t, append(seqIDs("s", 1, 3), seqIDs("s", 3, 5)...), f.recv.ids("s/r"), "resumed at #3")
	require.Equal(t, uint64(6), f.get("s", "r").NextSeq)
}

// Invariant 7: RunOnce reads no clock: the same inputs give the same
// schedule, bit for bit, and `at` reaches the transport.
func TestInvariant7CallersClock(t *testing.T) {
	schedule := func() ([]time.Time, []sent) {
		f := newFixture(t)
		f.recv.answer = func(push.Registration, push.Message, int) push.Outcome { return unavailable() }
		f.append("actor/alice", 1)
		f.register("actor/alice", "https://remote.example/inbox")
		w := f.worker(push.WithMaxAttempts(8))
		var instants []time.Time
		when := at(0)
		for range 7 {
			f.sweep(w, when)
			when = f.get("actor/alice", "https://remote.example/inbox").NextAttemptAt
			instants = append(instants, when)
		}
		return instants, f.recv.sent()
	}
	first, sentFirst := schedule()
	second, sentSecond := schedule()
	require.Equal(t, first, second, "the same inputs give the same schedule")
	require.Equal(t, sentFirst, sentSecond)
	// Pinned: the exact retry instants of this registration (store.Backoff
	// for failures 0..6, accumulated from t0 = 2026-03-15T11:00:00Z),
	// computed apart from this code from DESIGN.md's formula (delays 1, 2,
	// 3, 8, 14, 31 and 39 s).
	require.Equal(t, []time.Time{
		time.Date(2026, 3, 15, 11, 0, 1, 0, time.UTC),
		time.Date(2026, 3, 15, 11, 0, 3, 0, time.UTC),
		time.Date(2026, 3, 15, 11, 0, 6, 0, time.UTC),
		time.Date(2026, 3, 15, 11, 0, 14, 0, time.UTC),
		time.Date(2026, 3, 15, 11, 0, 28, 0, time.UTC),
		time.Date(2026, 3, 15, 11, 0, 59, 0, time.UTC),
		time.Date(2026, 3, 15, 11, 1, 38, 0, time.UTC),
	}, first)
	for i, s := range sentFirst {
		if i > 0 {
			require.True(t, s.At.Equal(first[i-1]), "attempt %d carries the sweep's instant", i+1)
		}
	}
}

// countingJournal counts journal reads.
type countingJournal struct {
	journal.Journal
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingJournal) Read(ctx context.Context, stream string, from uint64, limit, maxBytes int) ([]journal.Record, error) {
	c.mu.Lock()
	c.reads[stream]++
	c.mu.Unlock()
	return c.Journal.Read(ctx, stream, from, limit, maxBytes)
}

// Invariant 8: a registration whose cursor is past its stream's head is not
// read by a sweep; a sealed stream whose final record was acknowledged
// leaves no registration behind.
func TestInvariant8IdleCostsNothing(t *testing.T) {
	f := newFixture(t)
	cj := &countingJournal{Journal: f.store, reads: map[string]int{}}
	f.append("busy", 3)
	for i := range 50 {
		stream := fmt.Sprintf("idle/%d", i)
		f.append(stream, 2)
		f.registered(push.Registration{Stream: stream, ID: "r", URL: "https://a.example/", NextSeq: 3})
	}
	f.register("busy", "r")
	w := f.build(cj, f.store, f.recv, f.proj)

	rep, err := w.RunOnce(t.Context(), at(0), 100)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Registrations)
	rep, err = w.RunOnce(t.Context(), at(1), 100)
	require.NoError(t, err)
	require.Zero(t, rep.Registrations)
	require.Equal(t, map[string]int{"busy": 1}, cj.reads, "only the stream with work was read, once")

	final := journal.Entry{ID: "task-done", Kind: "statusUpdate", Payload: []byte(`{}`), Final: true}
	_, err = f.store.Append(t.Context(), "task/1", journal.Entry{ID: "task-start", Kind: "task", Payload: []byte(`{}`)}, final)
	require.NoError(t, err)
	f.register("task/1", "push-config")
	rep, err = w.RunOnce(t.Context(), at(2), 100)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Completed)
	_, err = f.store.Get(t.Context(), "task/1", "push-config")
	require.ErrorIs(t, err, journal.ErrNotFound, "the completed registration is gone")
}

// Invariant 10: bad input gets a clear error and changes nothing.
func TestInvariant10BadInput(t *testing.T) {
	f := newFixture(t)
	for i, c := range []struct {
		field string
		opt   push.Option
	}{
		{"MaxAttempts", push.WithMaxAttempts(0)}, // an explicit 0 is refused, not read as the default
		{"MaxInFlight", push.WithMaxInFlight(0)},
		{"DrainPage", push.WithDrainPage(0)},
		{"PageBytes", push.WithPageBytes(0)},
		{"PageBytes", push.WithPageBytes(push.MaxPageBytes + 1)},
		{"Lease", push.WithLease(0)},
		{"MaxRetryAfter", push.WithMaxRetryAfter(-time.Second)},
		{"Schedule", push.WithSchedule(push.Schedule{5 * time.Second, 0})},
		{"MaxPerHost", push.WithMaxPerHost(0)},
		{"MaxPerHost", push.WithMaxPerHost(-1)},
		{"MaxPerHost", push.WithMaxPerHost(push.MaxPerHostLimit + 1)},
	} {
		_, err := push.NewWorker(f.store, f.store, f.recv, f.proj, c.opt)
		require.ErrorIs(t, err, journal.ErrInvalid, "case %d", i)
		require.ErrorContains(t, err, c.field, "case %d", i)
	}
	f.worker(push.WithMaxPerHost(push.MaxPerHostLimit)) // the bound itself is accepted
	_, err := push.NewWorker(nil, f.store, f.recv, f.proj)
	require.ErrorIs(t, err, journal.ErrInvalid)

	f.append("s", 1)
	f.register("s", "r")
	w := f.worker()
	for _, limit := range []int{0, -1} {
		_, err = w.RunOnce(t.Context(), at(0), limit)
		require.ErrorIs(t, err, journal.ErrInvalid)
	}
	_, err = w.RunOnce(t.Context(), time.Time{}, 10)
	require.ErrorIs(t, err, journal.ErrInvalid)
	require.Empty(t, f.get("s", "r").LeaseOwner, "nothing was claimed")
	require.Empty(t, f.recv.sent())

	_, err = w.Register(t.Context(), push.Registration{Stream: "s", ID: "x", Namespace: "cloudevents", URL: "https://a.example/"})
	require.ErrorIs(t, err, journal.ErrInvalid, "a worker registers only its own namespace")
	_, err = w.Register(t.Context(), push.Registration{Stream: "s", ID: "x", URL: "gopher://a.example/"})
	require.ErrorIs(t, err, journal.ErrInvalid)
	_, err = f.store.Get(t.Context(), "s", "x")
	require.ErrorIs(t, err, journal.ErrNotFound)
}
