package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/stretchr/testify/require"
)

// earliestDue returns, per stream, the earliest instant one of its lagging,
// unparked registrations is due by its row (its next attempt, its lease's
// end, its host's next probe while the host is not up), read row by row: what
// the wake marker bounds from below, NULL where none lags.
func earliestDue(t testing.TB, s *Store) map[string]sql.NullInt64 {
	t.Helper()
	return byStream[sql.NullInt64](t, s, `SELECT s.stream, (
			SELECT MIN(MAX(IFNULL(r.next_attempt_at, ?1), IFNULL(r.lease_until, ?1), IFNULL(h.next_probe_at, ?1)))
			FROM herald_registration AS r LEFT JOIN herald_host AS h ON h.host = r.host AND h.state <> 'up'
			WHERE r.stream = s.stream AND r.parked = 0 AND r.next_seq <= s.head)
		FROM herald_stream AS s`, int64(dueNow))
}

// TestWakeMarkerIsNeverLaterThanADueRegistration drives one store through
// claims of two namespaces, with and without a per-host cap, and their
// ends (advance, retry, host failure, park, lease renewed or left to lapse),
// appends, answers, pauses and unparks, on a clock that moves by up to 20 s a
// step, one host failing every attempt. After every step, every stream's
// wake marker is at or before the earliest instant one of its registrations
// is due, whether leased, waiting out a retry, or held by a host that is
// down; and a claim that took everything due leaves a stream with nothing
// due at its instant unwoken, so the next sweeps take no write lock.
func TestWakeMarkerIsNeverLaterThanADueRegistration(t *testing.T) {
	ctx := context.Background()
	s := OpenTemp(t)
	rng := rand.New(rand.NewPCG(37, 12))
	streams := []string{"actor/a", "actor/b", "actor/c"}
	namespaces := []string{"webhook", "activitypub"}
	const down = "h0.example:443" // fails every attempt
	for _, stream := range streams {
		for i := range 2 {
			_, err := s.Append(ctx, stream, journal.Entry{ID: fmt.Sprintf("%s/%d", stream, i), Kind: "k", Payload: []byte(`{}`)})
			require.NoError(t, err)
		}
	}
	var ids []store.Key
	for i := range 36 {
		r := store.Registration{Stream: streams[i%len(streams)], ID: fmt.Sprintf("r%02d", i), Namespace: namespaces[rng.IntN(2)],
			URL: fmt.Sprintf("https://h%d.example/inbox/%d", rng.IntN(5), i), NextSeq: uint64(1 + rng.IntN(3))}
		_, err := s.Register(ctx, r)
		require.NoError(t, err)
		ids = append(ids, store.Key{Stream: r.Stream, ID: r.ID})
	}
	// What the checks saw, so that the test cannot pass by missing a state.
	var seen struct{ leased, retrying, held, unwoken int }
	now := idleT0
	var claims []store.Status
	for step := range 800 {
		now = now.Add(time.Duration(rng.IntN(20_000)) * time.Millisecond)
		before := woken(t, s)
		full := false
		switch op := rng.IntN(12); {
		case op < 4:
			q := store.DueQuery{At: now, Limit: 1 + rng.IntN(3), Namespace: namespaces[rng.IntN(2)], Owner: fmt.Sprintf("o%d", step),
				LeaseUntil: now.Add(time.Duration(5+rng.IntN(60)) * time.Second)}
			switch rng.IntN(3) {
			case 0:
				q.Limit, full = 1000, true // takes every registration due: recomputes the markers it read
			case 1:
				q.MaxPerHost, q.Busy = 1, map[string]int{fmt.Sprintf("h%d.example:443", rng.IntN(5)): rng.IntN(2)}
			}
			b, err := s.Due(ctx, q)
			require.NoError(t, err)
			claims = append(claims, b.Registrations...)
		case op < 9 && len(claims) > 0:
			i := rng.IntN(len(claims))
			c := claims[i]
			claims = slices.Delete(claims, i, i+1)
			err := endTurn(ctx, s, c, now, rng, c.Host() == down)
			if errors.Is(err, store.ErrLeaseLost) {
				err = nil // its lease lapsed and another claim took it
			}
			require.NoError(t, err, "step %d", step)
			if err == nil && c.Host() != down && rng.IntN(3) == 0 {
				claims = append(claims, c) // renewed, still in flight
			}
		case op < 10:
			stream := streams[rng.IntN(len(streams))]
			_, err := s.Append(ctx, stream, journal.Entry{ID: fmt.Sprintf("%s/s%d", stream, step), Kind: "k", Payload: []byte(`{}`)})
			require.NoError(t, err)
		case op < 11:
			_, err := s.HostAnswered(ctx, fmt.Sprintf("h%d.example:443", 1+rng.IntN(4)), now)
			require.NoError(t, err)
		default:
			k := ids[rng.IntN(len(ids))]
			var err error
			switch rng.IntN(3) {
			case 0:
				err = s.Unpark(ctx, k.Stream, k.ID, now) // nothing for one not parked
			case 1:
				err = s.Pause(ctx, k.Stream, k.ID, now, "test", "a step")
			default:
				err = s.Resume(ctx, k.Stream, k.ID, now, "test")
			}
			require.NoError(t, err)
		}

		markers, dues := woken(t, s), earliestDue(t, s)
		for stream, due := range dues {
			marker, set := markers[stream]
			if due.Valid {
				require.True(t, set, "step %d: %s lags (due at %d) but carries no wake marker", step, stream, due.Int64)
				require.LessOrEqual(t, marker, due.Int64, "step %d: %s woken %v after its first registration is due",
					step, stream, time.Duration(marker-due.Int64))
			}
			if m, wasWoken := before[stream]; full && wasWoken && m <= now.UnixNano() {
				if !due.Valid {
					require.False(t, set, "step %d: %s: nothing lags, yet the full claim left a marker", step, stream)
				} else if due.Int64 > now.UnixNano() {
					require.Greater(t, marker, now.UnixNano(), "step %d: %s: nothing due until %v, yet the full claim left it woken",
						step, stream, time.Duration(due.Int64-now.UnixNano()))
					seen.unwoken++
				}
			}
		}
		var leased, retrying, held int
		require.NoError(t, s.r.QueryRow(`SELECT
			IFNULL(SUM(r.lease_until > ?1), 0), IFNULL(SUM(r.lease_until IS NULL AND r.next_attempt_at > ?1), 0),
			IFNULL(SUM(r.host IN (SELECT host FROM herald_host WHERE state <> 'up' AND next_probe_at > ?1)), 0)
			FROM herald_registration AS r JOIN herald_stream AS s ON s.stream = r.stream
			WHERE r.parked = 0 AND r.next_seq <= s.head`, now.UnixNano()).Scan(&leased, &retrying, &held))
		seen.leased, seen.retrying, seen.held = seen.leased+leased, seen.retrying+retrying, seen.held+held
	}
	t.Logf("seen: %+v", seen)
	require.Positive(t, seen.leased, "no registration was ever leased")
	require.Positive(t, seen.retrying, "no registration ever waited out a retry")
	require.Positive(t, seen.held, "no host ever held its registrations")
	require.Positive(t, seen.unwoken, "no full claim ever left a stream with nothing due unwoken")
}

// endTurn ends claim c at now the way a turn may: a host that fails every
// attempt fails it; others advance it (to the head or one record),
// retry, park, fail for the host, renew its lease or leave it to lapse.
func endTurn(ctx context.Context, s *Store, c store.Status, now time.Time, rng *rand.Rand, failing bool) error {
	fail := store.HostFailure{Claim: c.Claim(), NextSeq: c.NextSeq, Host: c.Host(),
		Evidence: store.Evidence{At: now, Error: "timeout"}, Horizon: store.MinHostHorizon}
	if failing {
		_, err := s.HostFailed(ctx, fail)
		return err
	}
	switch rng.IntN(7) {
	case 0:
		return s.Advance(ctx, c.Claim(), c.Head+1)
	case 1:
		return s.Advance(ctx, c.Claim(), min(c.NextSeq+1, c.Head+1))
	case 2:
		return s.Retry(ctx, c.Claim(), c.NextSeq, now.Add(time.Duration(rng.IntN(120))*time.Second), store.Evidence{At: now, Error: "503"})
	case 3:
		return s.Park(ctx, c.Claim(), c.NextSeq, store.Evidence{At: now, Error: "410"})
	case 4:
		_, err := s.HostFailed(ctx, fail)
		return err
	case 5:
		_, err := s.Renew(ctx, now.Add(time.Duration(1+rng.IntN(90))*time.Second), []store.Claim{c.Claim()})
		return err
	}
	return nil // left to lapse
}

// countingQueryer counts the statements run through it, and keeps each
// with its arguments.
type countingQueryer struct {
	q     queryer
	calls []call
}

type call struct {
	query string
	args  []any
}

func (c *countingQueryer) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	c.calls = append(c.calls, call{query, args})
	return c.q.QueryRowContext(ctx, query, args...)
}

func (c *countingQueryer) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	c.calls = append(c.calls, call{query, args})
	return c.q.QueryContext(ctx, query, args...)
}

// waitingFanout opens a store whose stream actor/alice (head 2, woken)
// has n activitypub registrations in each state at cursor 1: waiting out a
// retry until t1+30s, leased until t1+20s, held by a host down until its
// probe at t1+10s, and n more leased at cursor 2 and n at the head. It
// returns the stream as Due reads it and the held hosts at t1.
func waitingFanout(tb testing.TB, n int) (*Store, wokenStream, []store.Host) {
	tb.Helper()
	ctx := context.Background()
	t1 := idleT0.UnixNano()
	s, err := Open(ctx, filepath.Join(tb.TempDir(), "herald.db"))
	require.NoError(tb, err)
	tb.Cleanup(func() { s.Close() })
	for i := range 2 {
		_, err = s.Append(ctx, "actor/alice", journal.Entry{ID: fmt.Sprintf("create-%d", i), Kind: "Create", Payload: []byte(`{}`)})
		require.NoError(tb, err)
	}
	retry, lease, probe := t1+int64(30*time.Second), t1+int64(20*time.Second), t1+int64(10*time.Second)
	_, err = s.w.Exec(`INSERT INTO herald_host (host, state, since, failures, next_probe_at) VALUES ('down.example:443', 'down', ?1, 3, ?2)`, t1, probe)
	require.NoError(tb, err)
	_, err = s.w.Exec(`WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < ?1)
		INSERT INTO herald_registration (stream, id, namespace, url, host, next_seq, next_attempt_at, lease_owner, lease_until)
		SELECT 'actor/alice', printf('%s-%06d', s.state, n), 'activitypub', 'https://' || s.host || '/inbox', s.host, s.seq, s.nat, s.owner, s.lease
		FROM i CROSS JOIN (
			SELECT 'retrying' AS state, 'up.example:443' AS host, 1 AS seq, ?3 AS nat, '' AS owner, NULL AS lease
			UNION ALL SELECT 'leased', 'up.example:443', 1, ?2, 'w', ?4
			UNION ALL SELECT 'held', 'down.example:443', 1, NULL, '', NULL
			UNION ALL SELECT 'leased2', 'up.example:443', 2, ?2, 'w', ?4 + 1
			UNION ALL SELECT 'idle', 'up.example:443', 3, NULL, '', NULL) AS s`, n, t1, retry, lease)
	require.NoError(tb, err)
	_, err = s.w.Exec("UPDATE herald_stream SET wake_at = ? WHERE stream = 'actor/alice'", t1)
	require.NoError(tb, err)
	h, _, err := getHost(ctx, s.r, "down.example:443")
	require.NoError(tb, err)
	return s, wokenStream{stream: "actor/alice", head: 2, cursors: []int64{1, 2}}, heldHosts(map[string]store.Host{h.Host: h}, idleT0)
}

// TestWakeMarkerReadsNoWaitingRegistration: the recompute of a fan-out's
// marker runs the same statements whether 10 or 2,000 of its registrations
// wait in each state (leased, waiting out a retry, held by a host that is
// down), each statement an index search for one row, never a scan nor a
// sort: it costs the cursors, not the audience (issue 37). Before, it read
// every lagging registration, with its host, at every claim that read to
// its end.
func TestWakeMarkerReadsNoWaitingRegistration(t *testing.T) {
	ctx := context.Background()
	var counts []int
	for _, n := range []int{10, 2000} {
		s, w, held := waitingFanout(t, n)
		_, err := s.w.Exec("ANALYZE") // statistics of a large audience must not turn a plan into a scan
		require.NoError(t, err)
		q := &countingQueryer{q: s.r}
		m, err := wakeMarker(ctx, q, w, "activitypub", held, idleT0.UnixNano())
		require.NoError(t, err)
		require.Equal(t, sql.NullInt64{Int64: idleT0.Add(10 * time.Second).UnixNano(), Valid: true}, m, "the held host's probe comes first")
		counts = append(counts, len(q.calls))
		for _, c := range q.calls {
			plan := queryPlan(t, s.r, c.query, c.args...)
			for _, line := range strings.Split(plan, "\n") {
				require.False(t, strings.HasPrefix(line, "SCAN") && line != "SCAN CONSTANT ROW", "a scan:\n%s\n%s", c.query, plan)
			}
			require.NotContains(t, plan, "TEMP B-TREE", "a sort:\n%s\n%s", c.query, plan)
			require.Contains(t, plan, "SEARCH", "%s\n%s", c.query, plan)
		}
	}
	require.Equal(t, counts[0], counts[1], "statements for 10 and for 2,000 registrations in each state")
}

// BenchmarkWakeMarker: one recompute of a fan-out's marker (waitingFanout)
// with 1,000 and 30,000 registrations in each state, and the same marker
// read row by row (earliestDue), as Due did before (BENCHMARKS.md 12.8).
func BenchmarkWakeMarker(b *testing.B) {
	for _, n := range []int{1000, 30000} {
		s, w, held := waitingFanout(b, n)
		ctx := context.Background()
		b.Run(fmt.Sprintf("waiting=%d", 3*n), func(b *testing.B) {
			tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // as in Due's transaction
			require.NoError(b, err)
			defer tx.Rollback()
			for b.Loop() {
				if _, err := wakeMarker(ctx, tx, w, "activitypub", held, idleT0.UnixNano()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("waiting=%d/row-by-row", 3*n), func(b *testing.B) {
			for b.Loop() {
				earliestDue(b, s)
			}
		})
	}
}
