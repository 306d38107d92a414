package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
	"github.com/heraldpush/herald/store/storetest"
	"github.com/stretchr/testify/require"
)

// The crash test re-executes this test binary as a child that appends and
// sweeps in a loop; TestMain sends it to crashChild instead of the tests.
const (
	envCrashChild = "HERALD_SQLITE_CRASH_CHILD"
	envCrashDB    = "HERALD_SQLITE_CRASH_DB"
	envCrashURL   = "HERALD_SQLITE_CRASH_URL"
	envCrashRun   = "HERALD_SQLITE_CRASH_RUN"
	crashStream   = "crash"
)

var crashRegistrations = []string{"a", "b"}

func TestMain(m *testing.M) {
	if os.Getenv(envCrashChild) == "1" {
		os.Exit(crashChild())
	}
	os.Exit(m.Run())
}

// batchPayload marks each record with its batch, so that a partial batch
// would show.
type batchPayload struct {
	Batch string `json:"batch"`
	N     int    `json:"n"`
	J     int    `json:"j"`
}

// crashChild appends a batch of 1 to 4 records and sweeps, forever, printing
// a line after each append ("appended <batch>") and each sweep ("swept <i>").
// The parent kills it with SIGKILL.
func crashChild() int {
	ctx := context.Background()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "crash child: %s: %v\n", what, err)
		return 2
	}
	run, err := strconv.Atoi(os.Getenv(envCrashRun))
	if err != nil {
		return fail("run number", err)
	}
	s, err := sqlite.Open(ctx, os.Getenv(envCrashDB))
	if err != nil {
		return fail("open", err)
	}
	for _, id := range crashRegistrations {
		if _, err := s.Register(ctx, store.Registration{Stream: crashStream, ID: id, Namespace: "webhook",
			URL: os.Getenv(envCrashURL) + "/" + id}); err != nil {
			return fail("register", err)
		}
	}
	w, err := push.NewWorker(s, s, storetest.HTTPTransport{Client: http.DefaultClient}, storetest.PayloadProjection{},
		push.WithOwner(fmt.Sprintf("child-%d", run)), push.WithSchedule(push.Schedule{time.Second}),
		push.WithMaxAttempts(1_000_000), push.WithDrainPage(7),
		push.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		return fail("worker", err)
	}
	// Each run sweeps an hour after the one before, so the leases a killed
	// child left behind (60 s) have expired.
	base := t0.Add(time.Duration(run) * time.Hour)
	for i := range 100_000 {
		batch := fmt.Sprintf("%d-%d", run, i)
		n := 1 + i%4
		entries := make([]journal.Entry, n)
		for j := range entries {
			p, _ := json.Marshal(batchPayload{Batch: batch, N: n, J: j})
			entries[j] = journal.Entry{ID: fmt.Sprintf("%s/%d", batch, j), Kind: "crash.test", Payload: p}
		}
		if _, err := s.Append(ctx, crashStream, entries...); err != nil {
			return fail("append", err)
		}
		fmt.Println("appended", batch)
		if _, err := w.RunOnce(ctx, base.Add(time.Duration(i)*time.Second), 10); err != nil {
			return fail("sweep", err)
		}
		fmt.Println("swept", i)
	}
	return 1 // never reached in the test: the parent kills it first
}

func TestCrashLosesNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	// Every fifth POST fails with 503, so retries are in the mix.
	rc := newReceiver(t, func(_ string, n int) int {
		if n%5 == 0 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	rng := rand.New(rand.NewPCG(20260315, 4))
	const kills = 24
	for run := range kills {
		lastAppended := runAndKill(t, path, rc.URL, run, 1+rng.IntN(24))
		verifyAfterCrash(t, ctx, path, rc, lastAppended)
	}

	// Nothing was lost: a final drain delivers every record to both.
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	w, err := push.NewWorker(s, s, rc.transport(), storetest.PayloadProjection{}, push.WithOwner("drain"),
		push.WithSchedule(push.Schedule{time.Second}), push.WithMaxAttempts(1_000_000))
	require.NoError(t, err)
	head, err := s.Head(ctx, crashStream)
	require.NoError(t, err)
	at := t0.Add((kills + 1) * time.Hour)
	for i := 0; i < 100 && !caughtUp(t, s, head); i++ {
		_, err := w.RunOnce(ctx, at.Add(time.Duration(i)*time.Second), 10)
		require.NoError(t, err)
	}
	require.True(t, caughtUp(t, s, head), "both registrations reach the head")
	recs, err := s.Read(ctx, crashStream, 1, int(head)+1, 0)
	require.NoError(t, err)
	for _, r := range recs {
		for _, id := range crashRegistrations {
			require.True(t, rc.acknowledged("/"+id, r.ID), "record %s reached %s", r.ID, id)
		}
	}
	t.Logf("%d kills, %d records, %d POSTs", kills, head, rc.count())
}

// runAndKill starts a child, reads lines progress lines from it, kills it
// with SIGKILL and returns the last batch it reported appended.
func runAndKill(t *testing.T, path, url string, run, lines int) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envCrashChild+"=1", envCrashDB+"="+path, envCrashURL+"="+url,
		envCrashRun+"="+strconv.Itoa(run))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	last := ""
	for i := range lines {
		if !sc.Scan() {
			_ = cmd.Wait()
			t.Fatalf("run %d: the child stopped after %d of %d progress lines: %s", run, i, lines, stderr.String())
		}
		if batch, ok := strings.CutPrefix(sc.Text(), "appended "); ok {
			last = batch
		}
	}
	require.NoError(t, cmd.Process.Kill()) // SIGKILL: no deferred function, no close, no checkpoint
	err = cmd.Wait()
	require.ErrorContains(t, err, "killed", "run %d: the child died of the signal (stderr: %s)", run, stderr.String())
	return last
}

// verifyAfterCrash checks the invariants a crash must keep: the database
// opens and passes integrity_check; seqs are gapless; every batch is all
// there or not at all; the last batch the child saw appended is there; and
// no cursor points past a record its receiver did not acknowledge.
func verifyAfterCrash(t *testing.T, ctx context.Context, path string, rc *receiver, lastAppended string) {
	t.Helper()
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err, "reopen after SIGKILL")
	defer s.Close()
	require.NoError(t, s.Check(ctx), "integrity_check after SIGKILL")
	head, err := s.Head(ctx, crashStream)
	require.NoError(t, err)
	recs, err := s.Read(ctx, crashStream, 1, int(head)+10, 0)
	require.NoError(t, err)
	require.Len(t, recs, int(head))
	type seen struct{ n, count, first, last int }
	batches := map[string]*seen{}
	for i, r := range recs {
		require.Equal(t, uint64(i+1), r.Seq, "gapless seqs")
		var p batchPayload
		require.NoError(t, json.Unmarshal(r.Payload, &p))
		b := batches[p.Batch]
		if b == nil {
			b = &seen{n: p.N, first: int(r.Seq)}
			batches[p.Batch] = b
		}
		b.count++
		b.last = int(r.Seq)
	}
	for name, b := range batches {
		require.Equal(t, b.n, b.count, "batch %s is all there", name)
		require.Equal(t, b.n, b.last-b.first+1, "batch %s is contiguous", name)
	}
	if lastAppended != "" {
		require.Contains(t, batches, lastAppended, "a batch whose Append returned survives the crash")
	}
	for _, id := range crashRegistrations {
		st, err := s.Get(ctx, crashStream, id)
		require.NoError(t, err)
		require.LessOrEqual(t, st.NextSeq, head+1)
		for _, r := range recs[:st.NextSeq-1] {
			require.True(t, rc.acknowledged("/"+id, r.ID), "cursor of %s is at #%d, past #%d (%s), which it never acknowledged",
				id, st.NextSeq, r.Seq, r.ID)
		}
	}
}

func caughtUp(t *testing.T, s *sqlite.Store, head uint64) bool {
	for _, id := range crashRegistrations {
		st, err := s.Get(context.Background(), crashStream, id)
		require.NoError(t, err)
		if st.NextSeq != head+1 {
			return false
		}
	}
	return true
}

// t0 is the tests' epoch: every instant is stated relative to it.
var t0 = time.Date(2026, 3, 15, 11, 0, 0, 123456789, time.UTC)

func TestDurabilityAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "herald.db")
	rc := newReceiver(t, func(path string, _ int) int {
		switch path {
		case "/ok":
			return http.StatusOK
		case "/gone":
			return http.StatusGone
		default:
			return http.StatusServiceUnavailable
		}
	})
	appendedAt := t0.Add(-time.Minute)
	s, err := sqlite.Open(ctx, path, sqlite.WithClock(func() time.Time { return appendedAt }))
	require.NoError(t, err)

	var entries []journal.Entry
	for i := range 5 {
		entries = append(entries, journal.Entry{ID: fmt.Sprintf("urn:rec:%d", i+1), Kind: "task.update",
			Payload: []byte(fmt.Sprintf(`{"n":%d}`, i+1))})
	}
	_, err = s.Append(ctx, "task/1", entries...)
	require.NoError(t, err)
	for _, id := range []string{"ok", "gone", "flaky"} {
		_, err := s.Register(ctx, store.Registration{Stream: "task/1", ID: id, Namespace: "webhook", URL: rc.URL + "/" + id,
			Config: store.Config(`{"secret":"whsec_x"}`)})
		require.NoError(t, err)
	}
	w, err := push.NewWorker(s, s, rc.transport(), storetest.PayloadProjection{}, push.WithOwner("worker-1"))
	require.NoError(t, err)
	rep, err := w.RunOnce(ctx, t0, 10)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Registrations)
	require.Equal(t, 5, rep.Deliveries, "all five records reached /ok")
	require.Equal(t, 1, rep.Parked, "/gone answered 410")
	require.Equal(t, 1, rep.Retries, "/flaky answered 503")

	type state struct {
		statuses map[string]store.Status
		evidence map[string][]store.Evidence
		records  []journal.Record
	}
	capture := func(s *sqlite.Store) state {
		st := state{statuses: map[string]store.Status{}, evidence: map[string][]store.Evidence{}}
		for _, id := range []string{"ok", "gone", "flaky"} {
			got, err := s.Get(ctx, "task/1", id)
			require.NoError(t, err)
			st.statuses[id] = got
			st.evidence[id], err = s.Evidence(ctx, "task/1", id, 0)
			require.NoError(t, err)
		}
		st.records, err = s.Read(ctx, "task/1", 1, 100, 0)
		require.NoError(t, err)
		return st
	}
	before := capture(s)
	require.NoError(t, s.Close())

	s, err = sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Check(ctx))
	after := capture(s)
	require.Equal(t, before, after, "everything survives a close and reopen")

	require.Len(t, after.records, 5)
	for i, r := range after.records {
		require.Equal(t, entries[i].ID, r.ID)
		require.Equal(t, string(entries[i].Payload), string(r.Payload))
		requireTime(t, appendedAt, r.AppendedAt, "AppendedAt, to the nanosecond")
	}
	ok := after.statuses["ok"]
	require.Equal(t, uint64(6), ok.NextSeq, "the cursor of the delivered registration")
	require.Equal(t, store.StateIdle, ok.State())
	require.Empty(t, after.evidence["ok"], "a success leaves no evidence")
	for _, e := range entries {
		require.True(t, rc.acknowledged("/ok", e.ID), "%s was acknowledged", e.ID)
	}

	gone := after.statuses["gone"]
	require.True(t, gone.Parked)
	requireTime(t, t0, gone.ParkedAt, "ParkedAt")
	require.Equal(t, uint64(1), gone.NextSeq, "parking keeps the cursor")
	require.Len(t, after.evidence["gone"], 1)
	require.Equal(t, store.EventParked, after.evidence["gone"][0].Event)
	require.Equal(t, http.StatusGone, after.evidence["gone"][0].Status)
	require.Equal(t, "urn:rec:1", after.evidence["gone"][0].RecordID)

	flaky := after.statuses["flaky"]
	require.False(t, flaky.Parked)
	require.Equal(t, 1, flaky.Attempts)
	require.Equal(t, uint64(1), flaky.NextSeq)
	wantRetry := t0.Add(store.Backoff("task/1", "flaky", 0))
	requireTime(t, wantRetry, flaky.NextAttemptAt, "NextAttemptAt from the backoff")
	require.Len(t, after.evidence["flaky"], 1)
	ev := after.evidence["flaky"][0]
	require.Equal(t, store.EventFailed, ev.Event)
	require.Equal(t, http.StatusServiceUnavailable, ev.Status)
	require.Equal(t, "Service Unavailable", ev.Body)
	requireTime(t, wantRetry, ev.NotBefore, "evidence NotBefore")
	require.Positive(t, ev.Duration)

	// The reopened store goes on where it stopped: only /flaky is due, at its
	// retry instant, and its failures add up.
	w, err = push.NewWorker(s, s, rc.transport(), storetest.PayloadProjection{}, push.WithOwner("worker-2"))
	require.NoError(t, err)
	rep, err = w.RunOnce(ctx, wantRetry.Add(-time.Nanosecond), 10)
	require.NoError(t, err)
	require.Zero(t, rep.Registrations, "nothing is due before the retry instant")
	rep, err = w.RunOnce(ctx, wantRetry, 10)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Registrations)
	require.Equal(t, 1, rep.Retries)
	flaky, err = s.Get(ctx, "task/1", "flaky")
	require.NoError(t, err)
	require.Equal(t, 2, flaky.Attempts)
}

func requireTime(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	require.Truef(t, want.Equal(got), "%s: want %v, got %v", what, want, got)
	require.Equal(t, time.UTC, got.Location(), "%s is returned in UTC", what)
}
