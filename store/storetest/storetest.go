// Package storetest is the conformance suite every herald store runs: Run
// exercises a Backend through every invariant a store can observe, one
// group of subtests a contract. A store is done when it passes:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Backend {
//			return openEmptyStore(t) // closed by t.Cleanup
//		})
//	}
//
// Append, as the suite checks it, returns the records with their seqs, and
// Read, Head and Lookup see a record once Append returned, however the store
// assigns seqs (store/postgres's package doc).
//
// The suite never sleeps: every instant is stated, in whole microseconds
// (PostgreSQL's precision).
package storetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// Backend is store.Backend, what the suite checks.
type Backend = store.Backend

// Factory returns a new, empty backend for one subtest, with the default
// payload limit (journal.DefaultMaxPayload). It arranges its own cleanup with
// t.Cleanup and fails t if it cannot open. Subtests run in parallel, so each
// call returns a backend of its own, sharing nothing with the others: its
// own database, schema or file.
type Factory func(t *testing.T) Backend

// Run runs the whole suite, one subtest per contract, every test in parallel
// with the others, each on a backend of its own (go test's -parallel bounds
// how many at once).
func Run(t *testing.T, open Factory) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Journal", journalTests},
		{"Registrations", registrationTests},
		{"Update", updateTests},
		{"Due", dueTests},
		{"Cursor", cursorTests},
		{"Turns", turnTests},
		{"AdvanceBatch", advanceBatchTests},
		{"Retention", retentionTests},
		{"Hosts", hostTests},
		{"Events", eventTests},
		{"Subscriptions", subscriptionTests},
		{"Pause", pauseTests},
		{"Rate", rateTests},
		{"Resend", resendTests},
		{"Tokens", tokenTests},
		{"ActorKeys", actorKeyTests},
	}
	_, batches := open(t).(store.AdvanceBatcher) // one backend more per Run, for its type
	for _, g := range groups {
		if g.name == "AdvanceBatch" && !batches {
			continue // a worker gives such a store one Advance a save
		}
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, fn := range g.tests {
				name := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
				t.Run(strings.TrimPrefix(name[strings.LastIndexByte(name, '.')+1:], "test"), func(t *testing.T) {
					t.Parallel()
					fn(t, open(t))
				})
			}
		})
	}
}

// test is one subtest, named after its function without "test".
type test = func(t *testing.T, b Backend)

// t0 is the suite's epoch; every instant is t0 plus a stated offset.
var t0 = time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

func entry(id string) journal.Entry {
	return journal.Entry{ID: id, Kind: "test.event", Payload: []byte(fmt.Sprintf(`{"id":%q}`, id))}
}

func entries(prefix string, n int) []journal.Entry {
	out := make([]journal.Entry, n)
	for i := range out {
		out[i] = entry(fmt.Sprintf("%s-%d", prefix, i+1))
	}
	return out
}

func appendN(t *testing.T, b Backend, stream string, n int) []journal.Record {
	t.Helper()
	recs, err := b.Append(t.Context(), stream, entries(stream, n)...)
	require.NoError(t, err)
	return recs
}

// appendSealed appends records "start" and "end", final, to stream.
func appendSealed(t *testing.T, b Backend, stream string) {
	t.Helper()
	end := entry("end")
	end.Final = true
	require.NoError(t, errOf(b.Append(t.Context(), stream, entry("start"), end)))
}

func reg(stream, id, ns string) store.Registration {
	return store.Registration{Stream: stream, ID: id, Namespace: ns, URL: "https://receiver.example/" + id,
		Config: store.Config(`{"secret":"s3cr3t"}`)}
}

// regFrom is reg with its cursor at next.
func regFrom(stream, id, ns string, next uint64) store.Registration {
	r := reg(stream, id, ns)
	r.NextSeq = next
	return r
}

func register(t *testing.T, b Backend, r store.Registration) store.Registration {
	t.Helper()
	got, err := b.Register(t.Context(), r)
	require.NoError(t, err)
	return got
}

func get(t *testing.T, b Backend, stream, id string) store.Status {
	t.Helper()
	st, err := b.Get(t.Context(), stream, id)
	require.NoError(t, err)
	return st
}

func due(t *testing.T, b Backend, ns, owner string, when time.Time, limit int) store.DueBatch {
	t.Helper()
	batch, err := b.Due(t.Context(), store.DueQuery{At: when, Limit: limit, Namespace: ns, Owner: owner, LeaseUntil: when.Add(time.Minute), CountUnserved: true})
	require.NoError(t, err)
	return batch
}

// claims numbers claim's namespaces and owners, unique across the tests
// running at once.
var claims atomic.Int64

// claim claims stream/id through Due at when (at or after its NextAttemptAt
// and lease expiry), under an owner of its own; the other registrations of
// its namespace that claim took are given back at once (Advance at their
// cursor), due again at when with the rest of their state kept.
func claim(t *testing.T, b Backend, stream, id string, when time.Time) store.Claim {
	t.Helper()
	st := get(t, b, stream, id)
	owner := fmt.Sprintf("owner-%d", claims.Add(1))
	batch, err := b.Due(t.Context(), store.DueQuery{At: when, Limit: 10_000, Namespace: st.Namespace, Owner: owner, LeaseUntil: when.Add(time.Minute)})
	require.NoError(t, err)
	var c *store.Claim
	for _, got := range batch.Registrations {
		if got.Stream == stream && got.ID == id {
			c = new(got.Claim())
			continue
		}
		require.NoError(t, b.Advance(t.Context(), got.Claim(), got.NextSeq), "give back %s/%s", got.Stream, got.ID)
	}
	require.NotNil(t, c, "claim %s/%s at %v", stream, id, when)
	return *c
}

// streamWithReg appends n records to stream "s" and registers regs, or s/r
// (reg) if none are given.
func streamWithReg(t *testing.T, b Backend, n int, regs ...store.Registration) {
	t.Helper()
	appendN(t, b, "s", n)
	if len(regs) == 0 {
		regs = []store.Registration{reg("s", "r", "webhook")}
	}
	for _, r := range regs {
		register(t, b, r)
	}
}

// streamWithRegs appends n records to stream "s" and registers s/r0.. on it.
func streamWithRegs(t *testing.T, b Backend, n, regs int) {
	t.Helper()
	appendN(t, b, "s", n)
	for i := range regs {
		register(t, b, reg("s", fmt.Sprintf("r%d", i), "webhook"))
	}
}

func evidence(t *testing.T, b Backend, stream, id string) []store.Evidence {
	t.Helper()
	evs, err := b.Evidence(t.Context(), stream, id, 0)
	require.NoError(t, err)
	return evs
}

func list(t *testing.T, b Backend, q store.ListQuery) []store.Status {
	t.Helper()
	sts, err := b.List(t.Context(), q)
	require.NoError(t, err)
	return sts
}

func head(t *testing.T, b Backend, stream string) uint64 {
	t.Helper()
	h, err := b.Head(t.Context(), stream)
	require.NoError(t, err)
	return h
}

// errOf is the error of a call whose result the check does not need.
func errOf[T any](_ T, err error) error { return err }

// race runs fn for workers 0..n-1 at once and fails t with the first error.
func race(t *testing.T, n int, fn func(w int) error) {
	t.Helper()
	var g errgroup.Group
	for w := range n {
		g.Go(func() error { return fn(w) })
	}
	require.NoError(t, g.Wait())
}

func keys(sts []store.Status) []string {
	return mapped(sts, func(s store.Status) string { return s.Stream + "/" + s.ID })
}

// mapped returns f of each of xs.
func mapped[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func requireTime(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	require.Truef(t, want.Equal(got), "%s: want %v, got %v", what, want, got)
}

// echo is a projection of one message per record, its id the record's.
type echo struct{}

func (echo) Messages(_ context.Context, rec journal.Record, _ store.Registration) ([]push.Message, error) {
	return []push.Message{{ID: rec.ID, ContentType: "application/json", Body: rec.Payload}}, nil
}
func (echo) Terminal(rec journal.Record) bool { return rec.Final }
func (echo) Namespace() string                { return "webhook" }

// arrival is one message a receiver was given.
type arrival struct {
	key    store.Key
	n      int    // the record's seq, from its id ("<stream>-N")
	cursor uint64 // with a receiver's store: the cursor stored when it came
	owner  string // and the lease owner
}

// receiver is a push.Transport that notes each message and, with b, the
// registration's stored state then; it answers 500 where fail says (try 1 is
// a record's first message), else 200.
type receiver struct {
	b    Backend
	fail func(n, try int) bool
	mu   sync.Mutex
	got  []arrival
}

func (rc *receiver) Deliver(ctx context.Context, reg store.Registration, msg push.Message, _ time.Time) (push.Outcome, error) {
	n, err := strconv.Atoi(msg.ID[strings.LastIndexByte(msg.ID, '-')+1:])
	if err != nil {
		return push.Outcome{}, err
	}
	a := arrival{key: reg.Key(), n: n}
	if rc.b != nil {
		st, err := rc.b.Get(ctx, reg.Stream, reg.ID)
		if err != nil {
			return push.Outcome{}, err
		}
		a.cursor, a.owner = st.NextSeq, st.LeaseOwner
	}
	rc.mu.Lock()
	try := 1
	for _, g := range rc.got {
		if g.key == a.key && g.n == n {
			try++
		}
	}
	rc.got = append(rc.got, a)
	failed := rc.fail != nil && rc.fail(n, try)
	rc.mu.Unlock()
	if failed { // about the record: charged to the registration
		return push.Outcome{Verdict: push.Transient, Status: 500, Reason: "500 Internal Server Error"}, nil
	}
	return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
}

func (rc *receiver) arrivals() []arrival {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// worker returns a worker over b that delivers to tr, with drain pages of
// page records, and options.
func worker(t *testing.T, b Backend, tr push.Transport, page int, opts ...push.Option) *push.Worker {
	w, err := push.NewWorker(b, b, tr, echo{}, append(opts, push.WithDrainPage(page),
		push.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))...)
	require.NoError(t, err)
	return w
}

func arrived(as []arrival) []int { return mapped(as, func(a arrival) int { return a.n }) }

func sorted(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}
