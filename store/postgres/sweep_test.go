package postgres_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/storetest"
)

// receiver is a real HTTP receiver that records every delivery and flags
// two deliveries to one registration in flight at once.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	inFlight map[string]string            // registration → worker delivering now
	got      map[string][]uint64          // registration → seqs, in arrival order
	byRound  map[string]map[string]string // registration → sweep instant → worker
	overlaps []string
	onPost   func(reg string, seq uint64) // called before answering, if set
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{inFlight: map[string]string{}, got: map[string][]uint64{}, byRound: map[string]map[string]string{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg, worker, round := r.Header.Get("X-Registration"), r.Header.Get("X-Worker"), r.Header.Get("X-At")
		seq, err := strconv.ParseUint(r.Header.Get("X-Seq"), 10, 64)
		if err != nil || reg == "" {
			http.Error(w, "missing headers", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		if other, busy := rc.inFlight[reg]; busy {
			rc.overlaps = append(rc.overlaps, fmt.Sprintf("%s #%d: %s while %s was delivering", reg, seq, worker, other))
		}
		rc.inFlight[reg] = worker
		if rc.byRound[reg] == nil {
			rc.byRound[reg] = map[string]string{}
		}
		if other, ok := rc.byRound[reg][round]; ok && other != worker {
			rc.overlaps = append(rc.overlaps, fmt.Sprintf("%s: both %s and %s delivered in the sweep at %s", reg, other, worker, round))
		}
		rc.byRound[reg][round] = worker
		rc.got[reg] = append(rc.got[reg], seq)
		rc.mu.Unlock()
		if rc.onPost != nil {
			rc.onPost(reg, seq)
		}
		rc.mu.Lock()
		delete(rc.inFlight, reg)
		rc.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func seqsUpTo(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// TestTwoWorkersNeverShareALiveLease: two workers on separate pools sweep
// the same 200 registrations at the same instants against a real HTTP
// receiver, while records keep arriving. No registration is delivered by
// both while a lease is live, every record arrives exactly once and in
// order, and no cursor moves backwards.
func TestTwoWorkersNeverShareALiveLease(t *testing.T) {
	const streams, perStream, first, more = 20, 10, 3, 4
	ctx := t.Context()
	url := migratedURL(t)
	sa, sb := openStore(t, url), openStore(t, url)
	rc := newReceiver(t)

	for i := range streams {
		stream := fmt.Sprintf("actor/%02d", i)
		for n := range first {
			_, err := sa.Append(ctx, stream, entry(fmt.Sprintf("%s-%d", stream, n+1)))
			require.NoError(t, err)
		}
		for j := range perStream {
			id := fmt.Sprintf("r%d", j)
			_, err := sa.Register(ctx, store.Registration{Stream: stream, ID: id, Namespace: "webhook", URL: regURL(rc.URL, stream, id)})
			require.NoError(t, err)
		}
	}
	workers := map[string]*push.Worker{}
	for name, s := range map[string]*postgres.Store{"A": sa, "B": sb} {
		w, err := push.NewWorker(s, s, storetest.HTTPTransport{Client: rc.Client(), Worker: name}, storetest.PayloadProjection{},
			push.WithOwner(name), push.WithMaxInFlight(8))
		require.NoError(t, err)
		workers[name] = w
	}

	cursors := map[string]uint64{}
	claimed := map[string]int{}
	for round := 1; ; round++ {
		require.Less(t, round, 500, "the workers did not drain the registrations")
		if round <= more { // records keep arriving while the workers sweep
			for i := range streams {
				stream := fmt.Sprintf("actor/%02d", i)
				s := map[bool]*postgres.Store{true: sa, false: sb}[i%2 == 0]
				_, err := s.Append(ctx, stream, entry(fmt.Sprintf("%s-%d", stream, first+round)))
				require.NoError(t, err)
			}
		}
		var wg sync.WaitGroup
		reports, errs := map[string]push.SweepReport{}, map[string]error{}
		var mu sync.Mutex
		for name, w := range workers {
			wg.Go(func() {
				r, err := w.RunOnce(ctx, at(round), 25)
				mu.Lock()
				reports[name], errs[name] = r, err
				mu.Unlock()
			})
		}
		wg.Wait()
		for name, err := range errs {
			require.NoError(t, err, "worker %s", name)
			claimed[name] += reports[name].Registrations
		}
		all, err := sa.List(ctx, store.ListQuery{Limit: store.MaxListLimit})
		require.NoError(t, err)
		require.Len(t, all, streams*perStream)
		for _, st := range all {
			k := key(st.Stream, st.ID)
			require.GreaterOrEqual(t, st.NextSeq, cursors[k], "cursor of %s moved backwards", k)
			cursors[k] = st.NextSeq
		}
		if round > more && reports["A"].Registrations+reports["B"].Registrations == 0 {
			break
		}
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Empty(t, rc.overlaps, "a registration was delivered by both workers under a live lease")
	require.Len(t, rc.got, streams*perStream)
	for reg, seqs := range rc.got {
		require.Equal(t, seqsUpTo(first+more), seqs, "%s: every record exactly once, in order", reg)
	}
	for k, c := range cursors {
		require.Equal(t, uint64(first+more+1), c, "%s: cursor past the head", k)
	}
	t.Logf("claims: %v", claimed)
	require.Positive(t, claimed["A"], "both workers took part")
	require.Positive(t, claimed["B"], "both workers took part")
}

// TestConnectionKilledMidSweep: the receiver terminates every connection
// of the worker's pool while the first delivery is in flight. That sweep
// returns ErrUnavailable (no pgx error type reachable); the next sweep,
// once the leases it left expire, reconnects and delivers everything.
func TestConnectionKilledMidSweep(t *testing.T) {
	ctx := t.Context()
	url := migratedURL(t)
	s := openStore(t, url)
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)

	rc := newReceiver(t)
	var killed atomic.Bool
	var killErr error
	rc.onPost = func(reg string, seq uint64) {
		if killed.Swap(true) {
			return
		}
		// pg_terminate_backend(pid, timeout) waits until each backend is gone.
		_, killErr = admin.Exec(ctx, `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	}
	for _, id := range []string{"r1", "r2", "r3"} {
		_, err := s.Register(ctx, store.Registration{Stream: "s", ID: id, Namespace: "webhook", URL: regURL(rc.URL, "s", id)})
		require.NoError(t, err)
	}
	for n := range 5 {
		_, err := s.Append(ctx, "s", entry(fmt.Sprintf("s-%d", n+1)))
		require.NoError(t, err)
	}
	w, err := push.NewWorker(s, s, storetest.HTTPTransport{Client: rc.Client(), Worker: "A"}, storetest.PayloadProjection{},
		push.WithOwner("A"), push.WithMaxInFlight(1))
	require.NoError(t, err)

	_, err = w.RunOnce(ctx, at(0), 10)
	require.True(t, killed.Load())
	require.NoError(t, killErr)
	require.Error(t, err, "the sweep whose connections were killed reports it")
	t.Logf("broken sweep: %v", err)
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	var pgErr *pgconn.PgError
	require.False(t, errors.As(err, &pgErr), "no pgconn error leaks: %v", err)

	rep, err := w.RunOnce(ctx, at(0).Add(push.DefaultLease), 10)
	require.NoError(t, err, "the next sweep recovers")
	require.Positive(t, rep.Registrations, "the lease the broken sweep left has expired")
	for _, id := range []string{"r1", "r2", "r3"} {
		st, err := s.Get(ctx, "s", id)
		require.NoError(t, err)
		require.Equal(t, uint64(6), st.NextSeq, "%s reached the head", id)
		requireInOrderCovering(t, rc.got[key("s", id)], 5)
	}
}

// requireInOrderCovering checks the seqs one registration received:
// together they cover 1..n (nothing lost), and each is the successor of the
// one before or a replay from an earlier cursor (never a jump ahead).
func requireInOrderCovering(t *testing.T, seqs []uint64, n int) {
	t.Helper()
	for i := 1; i < len(seqs); i++ {
		require.True(t, seqs[i] == seqs[i-1]+1 || seqs[i] <= seqs[i-1], "out of order: %v", seqs)
	}
	require.NotEmpty(t, seqs)
	require.Equal(t, uint64(1), seqs[0])
	unique := slices.Compact(slices.Sorted(slices.Values(seqs)))
	require.Equal(t, seqsUpTo(n), unique, "nothing lost: %v", seqs)
}
