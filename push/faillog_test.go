package push_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// A failing receiver is visible at the default log level before it parks:
// a line at its first failure naming the registration, its host, the answer
// and the next attempt, then at most one a minute of the caller's clock
// while it keeps failing; after a success, the next failure is a first.
func TestAFailingReceiverIsLoggedBeforeItParks(t *testing.T) {
	f := newFixture(t)
	failing := true
	f.recv.answer = func(push.Registration, push.Message, int) push.Outcome {
		if failing {
			return push.Outcome{Verdict: push.Transient, Status: 500, Reason: "500 Internal Server Error"}
		}
		return accepted()
	}
	f.append("s", 2)
	f.registered(push.Registration{Stream: "s", ID: "r", URL: "https://inbox.example/in"})
	var logs bytes.Buffer
	w := f.worker(push.WithOwner("w"), push.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))

	lines := func() []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "delivery failing") {
				out = append(out, l)
			}
		}
		return out
	}
	// Sweep at each instant the registration is due, for four minutes.
	var failedAt []time.Time
	for when := at(0); when.Before(at(240)); when = f.get("s", "r").NextAttemptAt {
		f.sweep(w, when)
		failedAt = append(failedAt, when)
	}
	got := lines()
	require.GreaterOrEqual(t, len(failedAt), 8, "the exponential backoff retries often in four minutes")
	require.NotEmpty(t, got)
	first := got[0]
	for _, want := range []string{"level=WARN", "stream=s", "registration=r", "host=inbox.example:443", "status=500",
		"attempt=1", "next_attempt_at=2026-03-15T11:00:01", `reason="500 Internal Server Error"`} {
		require.Contains(t, first, want)
	}
	require.LessOrEqual(t, len(got), 5, "at most one a minute over four minutes, and the first:\n%s", strings.Join(got, "\n"))
	require.GreaterOrEqual(t, len(got), 3, "it keeps telling while it keeps failing:\n%s", strings.Join(got, "\n"))

	failing = false
	last := f.get("s", "r").NextAttemptAt
	f.sweep(w, last)
	require.Equal(t, uint64(3), f.get("s", "r").NextSeq)
	failing = true
	f.append("s", 1)
	before := len(lines())
	f.sweep(w, last.Add(time.Second))
	require.Len(t, lines(), before+1, "a new run of failures is told at once")
}

// A host-level failure's line names the host's next probe only once it is
// held (down): while the host is up there is no probe, and the line shows
// no zero instant in its place.
func TestAHostFailureLogsItsNextProbeOnlyOnceTheHostIsDown(t *testing.T) {
	f := newFixture(t)
	f.recv.answer = func(push.Registration, push.Message, int) push.Outcome {
		return push.Outcome{Verdict: push.Transient, Reason: "dial: connection refused", HostLevel: true}
	}
	f.append("s", 1)
	f.registered(push.Registration{Stream: "s", ID: "r", URL: "https://down.example/in"})
	var logs bytes.Buffer
	w := f.worker(push.WithOwner("w"), push.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	var got []string
	for when := at(0); len(got) < store.HostDownAfter && when.Before(at(60)); when = f.get("s", "r").NextAttemptAt {
		f.sweep(w, when)
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "host-level failure") {
				got = append(got, l)
			}
		}
		logs.Reset()
	}
	require.Len(t, got, store.HostDownAfter, strings.Join(got, "\n"))
	for _, l := range got {
		require.NotContains(t, l, "0001-01-01", "no zero instant is logged")
	}
	for _, l := range got[:store.HostDownAfter-1] {
		require.Contains(t, l, "state=up")
		require.NotContains(t, l, "next_probe_at", "an up host has no probe")
	}
	down := got[store.HostDownAfter-1]
	require.Contains(t, down, "state=down")
	require.Contains(t, down, "next_probe_at=2026-")
}

// A host that comes back up is told once, by the worker whose answer
// brought it up; another worker that held it down and is answered after
// finds it up already, and says nothing.
func TestAHostComingUpIsLoggedOnceAcrossWorkers(t *testing.T) {
	f := newFixture(t)
	down := true
	f.recv.answer = func(push.Registration, push.Message, int) push.Outcome {
		if down {
			return push.Outcome{Verdict: push.Transient, Reason: "dial: connection refused", HostLevel: true}
		}
		return accepted()
	}
	f.append("s", 1)
	f.registered(push.Registration{Stream: "s", ID: "r1", URL: "https://down.example/a"})
	f.registered(push.Registration{Stream: "s", ID: "r2", URL: "https://down.example/b"})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	w1 := f.worker(push.WithOwner("w1"), push.WithLogger(logger))
	w2 := f.worker(push.WithOwner("w2"), push.WithLogger(logger))
	for i := 0; i < 4; i++ { // both workers see the host fail and go down
		f.sweep(w1, at(2*i))
		f.sweep(w2, at(2*i+1))
	}
	down = false
	for when := at(10); when.Before(at(600)) && (f.get("s", "r1").NextSeq == 1 || f.get("s", "r2").NextSeq == 1); when = when.Add(time.Second) {
		f.sweep(w1, when)
		f.sweep(w2, when.Add(time.Millisecond)) // its own clock: the daemon's workers each read theirs
	}
	require.Equal(t, uint64(2), f.get("s", "r1").NextSeq)
	require.Equal(t, uint64(2), f.get("s", "r2").NextSeq)
	require.Equal(t, 1, strings.Count(logs.String(), "host is up"), logs.String())
}
