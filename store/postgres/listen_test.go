package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store/postgres"
)

// TestAppendNotifiesOnCommitOnly: a Listener hears each sequencer step
// that numbered committed records (payload: how many), and nothing of an
// append that rolled back. Notifications are delivered in commit order, so
// hearing the committed one first proves none was sent for the other.
func TestAppendNotifiesOnCommitOnly(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	l, err := s.Listen(ctx)
	require.NoError(t, err)
	defer l.Close()

	require.NoError(t, appendInTx(ctx, s, "rolled-back", entry("x"), true))
	_, err = s.Sequence(ctx)
	require.NoError(t, err)
	_, err = s.Append(ctx, "task/1", entry("y1"), entry("y2"))
	require.NoError(t, err)
	n, err := l.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, "2", n)

	_, err = s.Append(ctx, "task/2", entry("z"))
	require.NoError(t, err)
	n, err = l.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, "1", n, "an append made between two Waits is not missed")
}

// TestListenerWaitEnds: a Wait ends at ctx's deadline when nothing was
// numbered, and with ErrListenerClosed when the Listener is closed.
func TestListenerWaitEnds(t *testing.T) {
	s := newStore(t)
	l, err := s.Listen(t.Context())
	require.NoError(t, err)
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = l.Wait(short)
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
	mine, err := daemon.Listen(ctx)
	require.NoError(t, err)
	defer mine.Close()
	theirs, err := other.Listen(ctx)
	require.NoError(t, err)
	defer theirs.Close()

	numbered := make(chan struct{}, 8)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		daemon.RunSequencerWaking(runCtx, func(err error) { t.Errorf("sequencer: %v", err) }, func() { numbered <- struct{}{} })
	}()
	defer func() { stop(); <-ran }()

	tx, err := daemon.Pool().Begin(ctx)
	require.NoError(t, err)
	_, err = daemon.AppendTx(ctx, tx, "task/1", entry("a1"), entry("a2"))
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	<-numbered // the step committed: its caller was told
	n, err := theirs.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, "2", n, "another process hears the step")

	_, err = other.Pool().Exec(ctx, `SELECT pg_notify($1, 'elsewhere')`, postgres.NotifyChannel)
	require.NoError(t, err)
	n, err = mine.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, "elsewhere", n, "the daemon's own step was not reported to its own listener")
	n, err = theirs.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, "elsewhere", n)
}
