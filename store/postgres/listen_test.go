package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// TestAppendNotifiesOnCommitOnly: a Listener hears each sequencer step
// that numbered committed records (payload: how many), and nothing of an
// append that rolled back. Notifications are delivered in commit order, so
// hearing the committed one first proves none was sent for the other.
func TestAppendNotifiesOnCommitOnly(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	l := listen(t, s)
	require.NoError(t, appendInTx(ctx, s, "rolled-back", entry("x"), true))
	sequence(t, s)
	_, err := s.Append(ctx, "task/1", entry("y1"), entry("y2"))
	require.NoError(t, err)
	requireHeard(t, l, "2")

	_, err = s.Append(ctx, "task/2", entry("z"))
	require.NoError(t, err)
	requireHeard(t, l, "1", "an append made between two Waits is not missed")
}

// listen opens a Listener of s, closed at the test's end.
func listen(t *testing.T, s *postgres.Store) store.Listener {
	t.Helper()
	l, err := s.Listen(t.Context())
	require.NoError(t, err)
	t.Cleanup(l.Close)
	return l
}

// requireHeard waits for l's next notification and checks its payload.
func requireHeard(t *testing.T, l store.Listener, want string, msg ...any) {
	t.Helper()
	got, err := l.Wait(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, got, msg...)
}

// TestListenerWaitEnds: a Wait ends at ctx's deadline when nothing was
// numbered, and with ErrListenerClosed when the Listener is closed.
func TestListenerWaitEnds(t *testing.T) {
	l := listen(t, newStore(t))
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := l.Wait(short)
	require.ErrorIs(t, err, context.DeadlineExceeded, "no append: the deadline ends the wait")

	waited := make(chan error, 1)
	go func() { _, err := l.Wait(t.Context()); waited <- err }()
	l.Close()
	require.ErrorIs(t, <-waited, postgres.ErrListenerClosed)
}

// TestSequencerWakesItsOwnProcess: RunSequencerWaking tells its caller
// after each step that numbered records, and its Store's Listeners skip
// that step's notification (the process was woken once already), while a
// Listener of another process hears it, and the first Store's hear every
// other backend's. Notifications arrive in commit order, so hearing the
// later one first proves the earlier was skipped.
func TestSequencerWakesItsOwnProcess(t *testing.T) {
	ctx := t.Context()
	url := migratedURL(t)
	daemon, other := openStore(t, url), openStore(t, url)
	mine, theirs := listen(t, daemon), listen(t, other)

	numbered := make(chan struct{}, 8)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		daemon.RunSequencerWaking(runCtx, func(err error) { t.Errorf("sequencer: %v", err) }, func() { numbered <- struct{}{} })
	}()
	defer func() { stop(); <-ran }()

	commitAppend(t, daemon, "task/1", entry("a1"), entry("a2"))
	<-numbered // the step committed: its caller was told
	requireHeard(t, theirs, "2", "another process hears the step")

	_, err := other.Pool().Exec(ctx, `SELECT pg_notify($1, 'elsewhere')`, postgres.NotifyChannel)
	require.NoError(t, err)
	requireHeard(t, mine, "elsewhere", "the daemon's own step was not reported to its own listener")
	requireHeard(t, theirs, "elsewhere")
}
