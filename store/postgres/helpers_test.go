package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// t0 is the tests' epoch: every instant is t0 plus a stated offset.
var t0 = time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

// acceptAll is an in-process transport for tests about the store, not the
// network: every message is accepted.
type acceptAll struct{}

func (acceptAll) Deliver(ctx context.Context, reg store.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
}

// countingJournal counts the Reads a worker makes.
type countingJournal struct {
	journal.Journal
	reads *atomic.Int64
}

func (c countingJournal) Read(ctx context.Context, stream string, fromSeq uint64, limit, maxBytes int) ([]journal.Record, error) {
	c.reads.Add(1)
	return c.Journal.Read(ctx, stream, fromSeq, limit, maxBytes)
}

func key(stream, id string) string { return stream + "/" + id }

func regURL(base, stream, id string) string { return fmt.Sprintf("%s/inbox/%s/%s", base, stream, id) }

func entry(id string) journal.Entry {
	return journal.Entry{ID: id, Kind: "test.event", Payload: []byte(fmt.Sprintf(`{"id":%q}`, id))}
}

// openTx begins a transaction on s's pool, rolled back at the test's end if
// it is still open.
func openTx(t *testing.T, s *postgres.Store) pgx.Tx {
	t.Helper()
	tx, err := s.Pool().Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// plannerTx is openTx with the planner settings of Due's and the
// sequencer's transactions, then the statements given.
func plannerTx(t *testing.T, s *postgres.Store, statements ...string) pgx.Tx {
	t.Helper()
	tx := openTx(t, s)
	for _, q := range append(slices.Clone(postgres.SQLPlanner), statements...) {
		_, err := tx.Exec(t.Context(), q)
		require.NoError(t, err)
	}
	return tx
}

// asSequencer makes statement number run as the holder of the sequencer's lock.
const asSequencer = `SELECT set_config('herald.sequencer', 'true', true)`

// plan runs EXPLAIN (ANALYZE, FORMAT JSON) of sql in tx and returns the
// plan's root node.
func plan(t *testing.T, tx pgx.Tx, sql string, args ...any) map[string]any {
	t.Helper()
	var raw []byte
	require.NoError(t, tx.QueryRow(t.Context(), "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&raw))
	var plans []struct {
		Plan map[string]any `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(raw, &plans))
	require.Len(t, plans, 1)
	return plans[0].Plan
}

// walk calls fn on node and on every node below it.
func walk(node map[string]any, fn func(node map[string]any)) {
	fn(node)
	kids, _ := node["Plans"].([]any)
	for _, k := range kids {
		walk(k.(map[string]any), fn)
	}
}

// lockWaiters counts the backends of s's database waiting for a lock.
func lockWaiters(t *testing.T, s *postgres.Store) int {
	t.Helper()
	var n int
	require.NoError(t, s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
	return n
}

// waitForLockWait returns once some backend of s's database waits for a
// lock (polling pg_stat_activity: a signal from the server, not a sleep).
func waitForLockWait(t *testing.T, s *postgres.Store) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); lockWaiters(t, s) == 0; {
		require.True(t, time.Now().Before(deadline), "no backend started waiting for a lock within 10s")
	}
}

// fanOut registers regs registrations r0… of stream (namespace webhook) and
// appends recs records e0… to it.
func fanOut(tb testing.TB, s *postgres.Store, stream string, regs, recs int) {
	tb.Helper()
	for i := range regs {
		_, err := s.Register(tb.Context(), store.Registration{Stream: stream, ID: fmt.Sprintf("r%d", i), Namespace: "webhook",
			URL: fmt.Sprintf("https://receiver.example/%d", i)})
		require.NoError(tb, err)
	}
	es := make([]journal.Entry, recs)
	for i := range es {
		es[i] = journal.Entry{ID: fmt.Sprintf("e%d", i), Kind: "k", Payload: []byte(`{}`)}
	}
	if recs > 0 {
		_, err := s.Append(tb.Context(), stream, es...)
		require.NoError(tb, err)
	}
}

// orderReceiver accepts every message at once and records the seqs each
// registration was sent, in the order sent; done closes after want.
type orderReceiver struct {
	mu   sync.Mutex
	seqs map[string][]uint64
	n    int
	want int
	done chan struct{}
}

func newOrderReceiver(want int) *orderReceiver {
	return &orderReceiver{seqs: map[string][]uint64{}, want: want, done: make(chan struct{})}
}

func (o *orderReceiver) Deliver(ctx context.Context, reg store.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	seq, err := strconv.ParseUint(msg.Header.Get("X-Seq"), 10, 64)
	if err != nil {
		return push.Outcome{}, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seqs[reg.ID] = append(o.seqs[reg.ID], seq)
	if o.n++; o.n == o.want {
		close(o.done)
	}
	return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
}

// runFanout runs a dispatcher of inFlight turns at once over calls until
// recv got all it wants.
func runFanout(tb testing.TB, calls *callCounter, recv *orderReceiver, inFlight int) {
	tb.Helper()
	w, err := push.NewWorker(calls, calls, recv, storetest.PayloadProjection{}, push.WithMaxInFlight(inFlight),
		push.WithMaxPerHost(push.MaxPerHostLimit))
	require.NoError(tb, err)
	run, stop := context.WithCancel(tb.Context())
	ended := make(chan error)
	go func() { ended <- w.Run(run, time.Second) }()
	<-recv.done
	stop()
	require.NoError(tb, <-ended)
}

// callCounter counts a worker's calls of the store.
type callCounter struct {
	*postgres.Store
	due, reads, advances, batches, batched atomic.Int64
}

func (c *callCounter) Due(ctx context.Context, q store.DueQuery) (store.DueBatch, error) {
	c.due.Add(1)
	return c.Store.Due(ctx, q)
}
func (c *callCounter) Read(ctx context.Context, s string, f uint64, l, b int) ([]journal.Record, error) {
	c.reads.Add(1)
	return c.Store.Read(ctx, s, f, l, b)
}
func (c *callCounter) Advance(ctx context.Context, cl store.Claim, n uint64) error {
	c.advances.Add(1)
	return c.Store.Advance(ctx, cl, n)
}
func (c *callCounter) AdvanceBatch(ctx context.Context, s []store.CursorSave) ([]error, error) {
	c.batches.Add(1)
	c.batched.Add(int64(len(s)))
	return c.Store.AdvanceBatch(ctx, s)
}

// claim claims registrations of namespace webhook at when, as owner, leased
// for a minute, and fails unless it gets want of them.
func claim(tb testing.TB, s *postgres.Store, when time.Time, owner string, limit, want int) []store.Status {
	tb.Helper()
	batch, err := s.Due(tb.Context(), store.DueQuery{At: when, Limit: limit, Namespace: "webhook", Owner: owner, LeaseUntil: when.Add(time.Minute)})
	require.NoError(tb, err)
	require.Len(tb, batch.Registrations, want)
	return batch.Registrations
}

// seedAudience gives stream actor/alice, with no record yet, n activitypub
// registrations inbox-000000… on n/10 hosts h0.example:443…, 10 a host and
// adjacent in key order (as a fediverse audience is), each with a 1.7 KB
// config (an ActivityPub one carries its PEM key), due since the year 1.
func seedAudience(tb testing.TB, s *postgres.Store, n int) {
	tb.Helper()
	ctx := tb.Context()
	_, err := s.Pool().Exec(ctx, `INSERT INTO herald_stream (stream) VALUES ('actor/alice')`)
	require.NoError(tb, err)
	_, err = s.Pool().Exec(ctx, `
		INSERT INTO herald_registration (stream, id, namespace, url, host, config, next_seq, next_attempt_at)
		SELECT 'actor/alice', format('inbox-%s', lpad(i::text, 6, '0')), 'activitypub',
			format('https://h%s.example/inbox/%s', i / 10, i), format('h%s.example:443', i / 10),
			convert_to(format('{"pad":"%s"}', repeat('k', 1700)), 'UTF8'), 1, '0001-01-01 00:00:00+00'
		FROM generate_series(0, $1::int - 1) AS i`, n)
	require.NoError(tb, err)
	_, err = s.Pool().Exec(ctx, `VACUUM (ANALYZE) herald_stream, herald_registration`)
	require.NoError(tb, err)
}
