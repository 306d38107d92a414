package push_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// holdingServer is a receiver on 127.0.0.4 that, while holding, keeps
// every request open until herald's side closes it, and says when want
// requests are open at once; otherwise it answers 204.
type holdingServer struct {
	addr    string
	holding atomic.Bool
	open    atomic.Int64
	want    int64
	allOpen chan struct{}
}

func newHoldingServer(t *testing.T, want int64) *holdingServer {
	ln, err := net.Listen("tcp", "127.0.0.4:0")
	require.NoError(t, err)
	s := &holdingServer{addr: ln.Addr().String(), want: want, allOpen: make(chan struct{})}
	s.holding.Store(true)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if !s.holding.Load() {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if s.open.Add(1) == s.want {
			close(s.allOpen)
		}
		<-r.Context().Done() // herald's side went away
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// Host health counts the receiver's failures only: deliveries that herald
// itself abandoned (a sweep whose context was cancelled, a turn cut at its
// lease's end) close their connections, and none of that is charged to
// the host or to a registration. Three registrations of one host are in
// flight when it happens (DefaultHostDownAfter failures would mark it
// down); afterwards the host is unmarked, no attempt or evidence is
// stored, and the next sweep delivers everything.
func TestHostHealthNeverCountsWhatHeraldAbandoned(t *testing.T) {
	cases := map[string]struct {
		opts []push.Option
		// abandon runs the sweep and makes herald abandon the deliveries
		// once all are open; it returns RunOnce's error and report.
		abandon func(w *push.Worker, s *holdingServer) (push.SweepReport, error)
		wantErr error
	}{
		"a sweep cancelled mid-delivery": {
			abandon: func(w *push.Worker, s *holdingServer) (push.SweepReport, error) {
				ctx, cancel := context.WithCancel(t.Context())
				go func() { <-s.allOpen; cancel() }()
				return w.RunOnce(ctx, at(0), 10)
			},
			wantErr: context.Canceled,
		},
		"turns cut at their lease's end": {
			// The shortest lease: its end is 1.8 s of real time away.
			opts: []push.Option{push.WithLease(2 * time.Second)},
			abandon: func(w *push.Worker, _ *holdingServer) (push.SweepReport, error) {
				return w.RunOnce(t.Context(), at(0), 10)
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := newHoldingServer(t, 3)
			tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: time.Minute})
			require.NoError(t, err)
			f := newFixture(t)
			w, err := push.NewWorker(f.store, f.store, tr, f.proj, append([]push.Option{push.WithOwner("w1")}, c.opts...)...)
			require.NoError(t, err)
			regs := []string{"a", "b", "c"}
			for _, stream := range regs {
				f.append(stream, 2)
				_, err := f.store.Register(t.Context(), push.Registration{Stream: stream, ID: "r", Namespace: ns, URL: "http://" + s.addr + "/" + stream})
				require.NoError(t, err)
			}

			rep, err := c.abandon(w, s)
			if c.wantErr != nil {
				require.ErrorIs(t, err, c.wantErr)
			} else {
				require.NoError(t, err, "a turn cut at its lease's end is no error")
			}
			require.Equal(t, int64(3), s.open.Load(), "all three were in flight")
			require.Zero(t, rep.HostFailures+rep.Retries+rep.Parked+rep.Deliveries+rep.Errors, "nothing counted: %+v", rep)
			hosts, err := f.store.Hosts(t.Context(), push.HostQuery{})
			require.NoError(t, err)
			for _, h := range hosts {
				require.False(t, h.Troubled(), "the host is not charged: %+v", h)
			}
			for _, stream := range regs {
				st := f.get(stream, "r")
				require.Equal(t, uint64(1), st.NextSeq, stream)
				require.Zero(t, st.Attempts, "%s: no attempt charged", stream)
				require.Zero(t, st.HostFailures, "%s: no host failure charged", stream)
				require.Empty(t, f.evidence(stream, "r"), "%s: no evidence of a failure", stream)
			}

			s.holding.Store(false)
			rep, err = w.RunOnce(t.Context(), at(60), 10)
			require.NoError(t, err)
			require.Equal(t, 6, rep.Deliveries, "the next sweep sends them again, and the rest")
			for _, stream := range regs {
				require.Equal(t, uint64(3), f.get(stream, "r").NextSeq, stream)
			}
		})
	}
}
