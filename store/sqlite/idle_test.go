package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/stretchr/testify/require"
)

var idleT0 = time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)

// woken returns the streams whose wake marker is set, with its value.
func woken(t *testing.T, s *Store) map[string]int64 {
	t.Helper()
	return byStream[int64](t, s, "SELECT stream, wake_at FROM herald_stream WHERE wake_at IS NOT NULL")
}

// byStream runs query, whose rows are a stream and its value, and returns
// the values by stream.
func byStream[V any](t testing.TB, s *Store, query string, args ...any) map[string]V {
	t.Helper()
	rows, err := s.r.Query(query, args...)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]V{}
	for rows.Next() {
		var (
			stream string
			v      V
		)
		require.NoError(t, rows.Scan(&stream, &v))
		out[stream] = v
	}
	require.NoError(t, rows.Err())
	return out
}

func claim(t *testing.T, s *Store, at time.Time, limit int) store.DueBatch {
	t.Helper()
	b, err := s.Due(context.Background(), store.DueQuery{At: at, Limit: limit, Namespace: "webhook", Owner: "w", LeaseUntil: at.Add(time.Minute)})
	require.NoError(t, err)
	return b
}

// TestIdleCostsNothing (invariant 8): once every registration is at its
// stream's head, no stream is woken, so Due reads no registration at all;
// an append wakes exactly its own stream.
func TestIdleCostsNothing(t *testing.T) {
	ctx := context.Background()
	s := OpenTemp(t)
	const streams, fanout = 20, 10
	for i := range streams {
		stream := fmt.Sprintf("actor/%d", i)
		for j := range fanout {
			_, err := s.Register(ctx, store.Registration{Stream: stream, ID: fmt.Sprintf("inbox-%d", j), Namespace: "webhook",
				URL: "https://receiver.example/inbox"})
			require.NoError(t, err)
		}
		_, err := s.Append(ctx, stream, journal.Entry{ID: stream + "/1", Kind: "Create", Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	require.Len(t, woken(t, s), streams, "every append woke its stream")

	batch := claim(t, s, idleT0, streams*fanout)
	require.Len(t, batch.Registrations, streams*fanout)
	for _, st := range batch.Registrations {
		require.NoError(t, s.Advance(ctx, st.Claim(), st.Head+1))
	}
	// Due set each marker to the end of the leases it stamped; the advances
	// (which only ever lower markers) left them there. Before that instant
	// Due does not look at these streams; at it, Due looks once, finds every
	// cursor at its head, and clears them.
	leaseEnd := idleT0.Add(time.Minute)
	for stream, at := range woken(t, s) {
		require.Equal(t, leaseEnd.UnixNano(), at, stream)
	}
	require.Empty(t, claim(t, s, leaseEnd.Add(-time.Nanosecond), 10).Registrations)
	require.Len(t, woken(t, s), streams)
	require.Empty(t, claim(t, s, leaseEnd, 10).Registrations)
	require.Empty(t, woken(t, s), "idle streams carry no marker")

	now := leaseEnd.Add(time.Second)
	_, err := s.Append(ctx, "actor/7", journal.Entry{ID: "actor/7/2", Kind: "Create", Payload: []byte(`{}`)})
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"actor/7": dueNow}, woken(t, s), "an append wakes its own stream only")
	batch = claim(t, s, now, 100)
	require.Len(t, batch.Registrations, fanout)

	// While claimed, the stream's marker is the lease's end; a retry lowers
	// it to the retry instant.
	require.Equal(t, map[string]int64{"actor/7": now.Add(time.Minute).UnixNano()}, woken(t, s))
	for _, st := range batch.Registrations[1:] {
		require.NoError(t, s.Advance(ctx, st.Claim(), st.Head+1))
	}
	retryAt := now.Add(30 * time.Second)
	first := batch.Registrations[0]
	require.NoError(t, s.Retry(ctx, first.Claim(), first.NextSeq, retryAt, store.Evidence{At: now, Error: "503"}))
	require.Equal(t, map[string]int64{"actor/7": retryAt.UnixNano()}, woken(t, s))
	require.Empty(t, claim(t, s, now.Add(time.Second), 10).Registrations)
	require.Equal(t, map[string]int64{"actor/7": retryAt.UnixNano()}, woken(t, s),
		"a stream with one registration retrying later is woken at the retry, not before")
	again := claim(t, s, retryAt, 10)
	require.Equal(t, []string{first.ID}, ids(again.Registrations))

	// A parked registration keeps no stream awake.
	require.NoError(t, s.Park(ctx, again.Registrations[0].Claim(), first.NextSeq, store.Evidence{At: retryAt, Error: "410"}))
	_, err = s.Append(ctx, "actor/7", journal.Entry{ID: "actor/7/3", Kind: "Create", Payload: []byte(`{}`)})
	require.NoError(t, err)
	batch = claim(t, s, retryAt.Add(time.Second), 100)
	require.Len(t, batch.Registrations, fanout-1, "every registration but the parked one")
	for _, st := range batch.Registrations {
		require.NoError(t, s.Advance(ctx, st.Claim(), st.Head+1))
	}
	require.Empty(t, claim(t, s, retryAt.Add(time.Hour), 10).Registrations)
	require.Empty(t, woken(t, s), "the parked registration lags, but keeps no stream awake")
}

func ids(sts []store.Status) []string {
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = st.ID
	}
	return out
}

// TestDueReadsOnlyWokenStreams: the plan of Due's query starts from the
// partial index of woken streams, never from a scan of the registrations.
func TestDueReadsOnlyWokenStreams(t *testing.T) {
	s := OpenTemp(t)
	// Statistics of a store where most streams are idle must not turn the
	// plan around.
	ctx := context.Background()
	for i := range 40 {
		stream := fmt.Sprintf("actor/%d", i)
		_, err := s.Append(ctx, stream, journal.Entry{ID: stream + "/1", Kind: "Create", Payload: []byte(`{}`)})
		require.NoError(t, err)
		for j := range 3 {
			_, err := s.Register(ctx, store.Registration{Stream: stream, ID: fmt.Sprintf("inbox-%d", j), Namespace: "webhook",
				URL: "https://receiver.example/inbox", NextSeq: 2})
			require.NoError(t, err)
		}
	}
	_, err := s.Append(ctx, "actor/1", journal.Entry{ID: "actor/1/2", Kind: "Create", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = s.w.Exec("ANALYZE")
	require.NoError(t, err)
	for q, args := range map[string][]any{
		stmt("woken"):     {0},
		stmt("unserved"):  {0, "webhook"},
		stmt("any_woken"): {0},
	} {
		plan := queryPlan(t, s.r, q, args...)
		require.Contains(t, plan, "INDEX herald_stream_wake (wake_at<?)", "plan:\n%s", plan)
		require.NotContains(t, plan, "SCAN r", "plan:\n%s", plan)
	}
}

// TestClaimReadsAStreamInClaimOrderWithoutSorting: Due reads each woken
// stream's due registrations cursor by cursor from the index, in claim
// order, and stops at its LIMIT; a sort of them (a temporary b-tree) would read every registration
// due at each claim, the cost issue 37 measured growing with the audience.
func TestClaimReadsAStreamInClaimOrderWithoutSorting(t *testing.T) {
	s := OpenTemp(t)
	ctx := context.Background()
	_, err := s.Append(ctx, "actor/alice", journal.Entry{ID: "create-1", Kind: "Create", Payload: []byte(`{}`)})
	require.NoError(t, err)
	for i := range 200 {
		_, err := s.Register(ctx, store.Registration{Stream: "actor/alice", ID: fmt.Sprintf("inbox-%03d", i), Namespace: "webhook",
			URL: fmt.Sprintf("https://h%d.example/inbox", i%20)})
		require.NoError(t, err)
	}
	_, err = s.w.Exec("ANALYZE")
	require.NoError(t, err)
	plan := queryPlan(t, s.r, stmt("due_of_cursor"), "actor/alice", "webhook", 0, 1, 8, `["h1.example:443"]`)
	require.Contains(t, plan, "INDEX herald_registration_due (stream=? AND next_seq=? AND namespace=?)", "plan:\n%s", plan)
	require.NotContains(t, plan, "TEMP B-TREE", "plan:\n%s", plan)
	plan = queryPlan(t, s.r, stmt("next_cursor"), "actor/alice", 0, 1)
	require.Contains(t, plan, "INDEX herald_registration_due (stream=? AND next_seq>? AND next_seq<?)", "plan:\n%s", plan)
}

func queryPlan(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q, args...)
	require.NoError(t, err)
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		lines = append(lines, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(lines, "\n")
}

// TestHeldHostCostsNoWritePerSweep: once a host is down and one Due has
// seen it, the wake marker of a stream whose only lagging registrations are
// held is the host's next probe instant, so the sweeps until then find no
// woken stream and take no write lock; the probe's claim moves the marker
// to the next probe, and an answer wakes the stream at once.
func TestHeldHostCostsNoWritePerSweep(t *testing.T) {
	ctx := context.Background()
	s := OpenTemp(t)
	_, err := s.Append(ctx, "s", journal.Entry{ID: "e1", Kind: "test.event", Payload: []byte(`{}`)})
	require.NoError(t, err)
	for i := range 3 {
		_, err := s.Register(ctx, store.Registration{Stream: "s", ID: fmt.Sprintf("r%d", i), Namespace: "webhook", URL: "https://down.example/inbox"})
		require.NoError(t, err)
	}
	var h store.Host
	for _, st := range claim(t, s, idleT0, 10).Registrations {
		h, err = s.HostFailed(ctx, store.HostFailure{Claim: st.Claim(), NextSeq: 1, Host: st.Host(),
			Evidence: store.Evidence{At: idleT0, Error: "timeout"}, Horizon: store.MinHostHorizon})
		require.NoError(t, err)
	}
	require.Equal(t, store.HostDown, h.State)

	// Its registrations' retries (HostRetryAt) are due before the probe:
	// the first Due after them sets the marker to the probe instant.
	for when := idleT0.Add(4 * time.Second); when.Before(h.NextProbeAt); when = when.Add(250 * time.Millisecond) {
		require.Empty(t, claim(t, s, when, 10).Registrations, "held at %v", when)
		require.Equal(t, map[string]int64{"s": h.NextProbeAt.UnixNano()}, woken(t, s), "the marker waits for the probe: no write until then")
	}
	probe := claim(t, s, h.NextProbeAt, 10)
	require.Len(t, probe.Registrations, 1, "one probe")
	next, _, err := getHost(ctx, s.r, h.Host)
	require.NoError(t, err)
	require.Equal(t, h.NextProbeAt.Add(store.ProbeDelay(h.Host, 1)), next.NextProbeAt)
	require.Equal(t, map[string]int64{"s": next.NextProbeAt.UnixNano()}, woken(t, s),
		"the other two are held until the next probe, before the probe's lease ends")

	_, err = s.HostAnswered(ctx, h.Host, h.NextProbeAt)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"s": dueNow}, woken(t, s), "an answer wakes the host's streams")
	require.Len(t, claim(t, s, h.NextProbeAt.Add(30*time.Second), 10).Registrations, 2, "the other two are released (the probe is still leased)")
}

// A resend pending in another namespace costs this namespace's look for
// resends no write: DueResends answers from its read snapshot while another
// connection holds the write lock, and the other namespace still claims it.
func TestAnotherNamespacesResendCostsNoWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	for _, id := range []string{"e1", "e2"} {
		_, err = s.Append(ctx, "s", journal.Entry{ID: id, Kind: "test.event", Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	_, err = s.Register(ctx, store.Registration{Stream: "s", ID: "r", Namespace: "other", URL: "https://r.example/", NextSeq: 2})
	require.NoError(t, err)
	require.NoError(t, errOf(s.Resend(ctx, "s", "r", 1, idleT0, "alice")))
	query := func(ns string) store.DueQuery {
		return store.DueQuery{At: idleT0, Limit: 10, Namespace: ns, Owner: "w", LeaseUntil: idleT0.Add(time.Minute)}
	}

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	lock, err := db.Conn(ctx)
	require.NoError(t, err)
	_, err = lock.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err)
	look, cancel := context.WithTimeout(ctx, 10*time.Second) // a write would wait for the lock past it
	defer cancel()
	batch, err := s.DueResends(look, query("webhook"))
	require.NoError(t, err, "webhook's look took the write lock for other's resend")
	require.Empty(t, batch.Resends)
	_, err = lock.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, lock.Close())

	batch, err = s.DueResends(ctx, query("other"))
	require.NoError(t, err)
	require.Len(t, batch.Resends, 1)
}

// errOf is a resend's error, its queued dropped.
func errOf(_ bool, err error) error { return err }

// TestClaimReadsOnlyTroubledHosts: each claim reads the hosts that are
// down or failing (troubled_hosts) from a partial index, never every host:
// an up host keeps a row for the signature scheme it accepted, one for
// each such host a daemon ever delivered to.
func TestClaimReadsOnlyTroubledHosts(t *testing.T) {
	s := OpenTemp(t)
	for i := range 200 {
		_, err := s.w.Exec(`INSERT INTO herald_host (host, state, since, signature_scheme, scheme_at) VALUES (?, 'up', 1, 'cavage', 1)`,
			fmt.Sprintf("h%d.example:443", i))
		require.NoError(t, err)
	}
	_, err := s.w.Exec(`INSERT INTO herald_host (host, state, since, failures) VALUES ('down.example:443', 'down', 1, 3)`)
	require.NoError(t, err)
	_, err = s.w.Exec("ANALYZE")
	require.NoError(t, err)
	plan := queryPlan(t, s.r, stmt("troubled_hosts"))
	require.Contains(t, plan, "INDEX herald_host_troubled", "plan:\n%s", plan)
}
