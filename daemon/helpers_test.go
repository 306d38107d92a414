package daemon

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/store"
)

// testToken is a token as strong as CheckToken asks.
const testToken = "0f9c2a7e41b85d36c0e1f4a29b7d58e3"

// running is a daemon made of opts and started: Run has opened its
// listeners (their addresses are returned) when it returns. stopped is
// closed when Run returns, with its error in *runErr; the test's cleanup
// stops the daemon and requires that Run ended cleanly. Logs are
// discarded unless opts has a Logger.
type running struct {
	*Daemon
	Addrs   Addrs
	stopped <-chan struct{}
	runErr  *error
}

func start(t *testing.T, opts Options) running {
	t.Helper()
	ready := make(chan Addrs, 1)
	opts.Ready = func(a Addrs) { ready <- a }
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d, err := New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	stopped := make(chan struct{})
	var runErr error
	go func() {
		defer close(stopped)
		runErr = d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
		require.NoError(t, runErr, "Run")
	})
	select {
	case a := <-ready:
		return running{Daemon: d, Addrs: a, stopped: stopped, runErr: &runErr}
	case <-stopped:
		t.Fatalf("the daemon stopped before it was ready: %v", runErr)
	}
	return running{}
}

// send sends req with srv's client and returns the answer, its body read
// (and closed) as a string.
func send(t *testing.T, srv *httptest.Server, req *http.Request) (*http.Response, string) {
	t.Helper()
	return sendWith(t, srv.Client(), req)
}

// sendWith is send with the client c.
func sendWith(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// adminServer serves the admin API on s with token and the clock at now,
// until the test ends.
func adminServer(t *testing.T, s store.Backend, token string, now time.Time) *httptest.Server {
	srv := httptest.NewServer(adminHandler(s, adminGate(s, token, now), func() time.Time { return now }, func(string) {}))
	t.Cleanup(srv.Close)
	return srv
}

// adminGate is the admin address's gate on s with token, the clock at now.
func adminGate(s store.TokenStore, token string, now time.Time) gate {
	return gate{open: token == "", auth: operator.Authenticator{Store: s, Now: func() time.Time { return now },
		Static: []operator.Static{{Secret: token, Role: store.RoleAdmin, Name: "HERALD_ADMIN_TOKEN"}}}}
}

// TestMain starts a throwaway PostgreSQL for the tests that append to one.
func TestMain(m *testing.M) { pgtest.Main(m) }

// requireNoSubscription fails t unless s holds no subscription, saying why.
func requireNoSubscription(t *testing.T, s store.Backend, why ...any) {
	t.Helper()
	subs, err := s.Subscriptions(t.Context(), "")
	require.NoError(t, err)
	require.Empty(t, subs, why...)
}
