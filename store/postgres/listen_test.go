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

// TestWaitForAppend: the daemon's sleep ends on an append from another
// store (another process), or at its deadline; a closed listener says so.
func TestWaitForAppend(t *testing.T) {
	ctx := t.Context()
	url := migratedURL(t)
	daemon, app := openStore(t, url), openStore(t, url)

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, daemon.WaitForAppend(short), context.DeadlineExceeded, "no append: the deadline ends the wait")

	woke := make(chan error, 1)
	go func() { woke <- daemon.WaitForAppend(ctx) }()
	// The listener exists since the first call, so this append is heard
	// whenever the goroutine gets to wait.
	_, err := app.Append(ctx, "actor/alice", entry("a"))
	require.NoError(t, err)
	require.NoError(t, <-woke)

	l, err := app.Listen(ctx)
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() { _, err := l.Wait(ctx); waited <- err }()
	l.Close()
	require.ErrorIs(t, <-waited, postgres.ErrListenerClosed)
}

// TestWithoutNotify: WithNotify(false) sequencer steps send nothing.
func TestWithoutNotify(t *testing.T) {
	ctx := t.Context()
	url := migratedURL(t)
	quiet, loud := openStore(t, url, postgres.WithNotify(false)), openStore(t, url)
	l, err := loud.Listen(ctx)
	require.NoError(t, err)
	defer l.Close()
	_, err = quiet.Append(ctx, "quiet", entry("q1"), entry("q2"))
	require.NoError(t, err)
	_, err = loud.Append(ctx, "loud", entry("l"))
	require.NoError(t, err)
	n, err := l.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, "1", n, "the quiet store's sequencer step sent no notification")
}
