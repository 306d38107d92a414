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

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/sqlite"
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
		if _, err := s.Register(ctx, push.Registration{Stream: crashStream, ID: id, Namespace: "webhook",
			URL: os.Getenv(envCrashURL) + "/" + id}); err != nil {
			return fail("register", err)
		}
	}
	w, err := push.NewWorker(s, s, postTransport{client: http.DefaultClient}, payloadProjection{},
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
	w, err := push.NewWorker(s, s, rc.transport(), payloadProjection{}, push.WithOwner("drain"),
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
	recs, err := s.Read(ctx, crashStream, 1, int(head)+1)
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
	recs, err := s.Read(ctx, crashStream, 1, int(head)+10)
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
