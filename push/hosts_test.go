package push_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"context"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/internal/rawtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/transport"
)

// hostServer is a receiver on one loopback address whose behaviour a test
// switches: it counts every request that reaches it and keeps, per path, the
// bodies it accepted, in order.
type hostServer struct {
	addr     string
	mode     atomic.Value // "ok", "silent", "503"
	requests atomic.Int64
	mu       sync.Mutex
	accepted map[string][]string
}

// newHostServer serves a hostServer in mode on ip, on a free port.
func newHostServer(t *testing.T, ip, mode string) *hostServer { return startAt(t, ip+":0", mode) }

// reserve returns a free port on ip and closes it: connections to it are
// refused until something listens there again.
func reserve(t *testing.T, ip string) string {
	ln, err := net.Listen("tcp", ip+":0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startAt serves a hostServer in mode on addr (a reserved port, or ip:0).
func startAt(t *testing.T, addr, mode string) *hostServer {
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	return serveHost(t, ln, mode)
}

// serveHost serves a hostServer in mode on ln.
func serveHost(t *testing.T, ln net.Listener, mode string) *hostServer {
	s := &hostServer{addr: ln.Addr().String(), accepted: map[string][]string{}}
	s.mode.Store(mode)
	srv := &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *hostServer) handle(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	body, _ := io.ReadAll(r.Body)
	switch s.mode.Load() {
	case "silent":
		<-r.Context().Done() // accepts, reads, never answers: the client's timeout ends it
		return
	case "503":
		http.Error(w, "<h1>503 Service Unavailable</h1>\x1b[31mno server is available\x00", http.StatusServiceUnavailable)
		return
	}
	s.mu.Lock()
	s.accepted[r.URL.Path] = append(s.accepted[r.URL.Path], string(body))
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (s *hostServer) bodies(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.accepted[path])
}

func bodies(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf(`{"n":%d}`, i))
	}
	return out
}

// A bad host, on its own loopback address, seen by herald through the real
// transport: each case says how it fails, how the test counts what reaches
// it, and how it recovers.
type badHost struct {
	url      string       // base URL herald posts to
	requests func() int64 // what reached the host (or, refused, what herald tried)
	recover  func()       // make it answer 2xx from now on
	accepted func(path string) []string
	answers  bool // its failures are answers (a gateway's 5xx): the run must span HostDownSpan
}

// Host health against real loopback servers, driven with explicit instants:
// a healthy receiver on 127.0.0.1 keeps delivering while the bad host on
// 127.0.0.2 is marked down after the threshold, receives exactly one request
// per probe window (two workers racing at each probe instant), and, when it
// recovers, every held registration delivers everything in order, with
// nothing parked and no attempt charged.
func TestHostHealthOverRealHTTP(t *testing.T) {
	cases := map[string]func(t *testing.T, attempts *atomic.Int64) badHost{
		"accepts and never answers": func(t *testing.T, _ *atomic.Int64) badHost {
			s := newHostServer(t, "127.0.0.2", "silent")
			return badHost{url: "http://" + s.addr, requests: s.requests.Load, recover: func() { s.mode.Store("ok") }, accepted: s.bodies}
		},
		"refuses connections": func(t *testing.T, attempts *atomic.Int64) badHost {
			addr := reserve(t, "127.0.0.2")
			var s *hostServer
			return badHost{url: "http://" + addr, requests: attempts.Load, // nothing listens to count: herald's attempts are counted
				recover: func() { s = startAt(t, addr, "ok") }, accepted: func(p string) []string { return s.bodies(p) }}
		},
		"answers 503 without Retry-After": func(t *testing.T, _ *atomic.Int64) badHost {
			s := newHostServer(t, "127.0.0.2", "503")
			return badHost{url: "http://" + s.addr, requests: s.requests.Load, recover: func() { s.mode.Store("ok") }, accepted: s.bodies, answers: true}
		},
		"reverse proxy answers 502 to everything": func(t *testing.T, _ *atomic.Int64) badHost {
			backend := reserve(t, "127.0.0.3") // the proxy's upstream: down
			var requests atomic.Int64
			proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: backend})
			proxy.ErrorLog = nil
			ln, err := net.Listen("tcp", "127.0.0.2:0")
			require.NoError(t, err)
			srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				proxy.ServeHTTP(w, r)
			})}
			srv.ErrorLog = nil
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })
			var up *hostServer
			return badHost{url: "http://" + ln.Addr().String(), requests: requests.Load,
				recover: func() { up = startAt(t, backend, "ok") }, accepted: func(p string) []string { return up.bodies(p) }, answers: true}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			var attempts atomic.Int64 // herald's attempts at the bad host
			bad := setup(t, &attempts)
			badHostName := store.HostOf(bad.url)
			healthy := newHostServer(t, "127.0.0.1", "ok")
			tr := loopback(t, 300*time.Millisecond)
			f := newFixture(t)
			hooks := push.Hooks{Attempt: func(a push.Attempt) {
				if store.HostOf(a.Registration.URL) == badHostName {
					attempts.Add(1)
				}
			}}
			worker := func(owner string) *push.Worker {
				w := f.workerOn(tr, push.WithOwner(owner), push.WithHooks(hooks), push.WithMaxAttempts(2))
				return w
			}
			w1, w2 := worker("w1"), worker("w2")
			register := func(stream, id, url string) {
				f.registered(push.Registration{Stream: stream, ID: id, URL: url})
			}
			f.append("healthy", 2)
			register("healthy", "r", "http://"+healthy.addr+"/healthy")
			held := []string{"x0", "x1", "x2"}
			for _, s := range held {
				f.append(s, 2)
				register(s, "r", bad.url+"/"+s)
			}
			sweep := func(w *push.Worker, when time.Time) push.SweepReport {
				rep, err := w.RunOnce(t.Context(), when, 100)
				require.NoError(t, err)
				return rep
			}
			host := func() store.Host {
				list, err := f.store.Hosts(t.Context(), store.HostQuery{Host: badHostName})
				require.NoError(t, err)
				require.Len(t, list, 1)
				return list[0]
			}

			rep := sweep(w1, at(0))
			require.Equal(t, 3, rep.HostFailures, "each of the three failed for its host")
			require.Zero(t, rep.Retries+rep.Parked, "none is charged to its registration")
			require.Equal(t, bodies(1, 2), healthy.bodies("/healthy"), "the healthy receiver got its records")
			h, downAt, sent := host(), at(0), int64(3)
			if bad.answers {
				require.Equal(t, store.HostUp, h.State, "answers: not down before the run spans %v", store.HostDownSpan)
				downAt, sent = at(0).Add(store.HostDownSpan), 6
				rep = sweep(w1, downAt)
				require.Equal(t, 3, rep.HostFailures, "each of the three failed again for its host")
				h = host()
			}
			require.Equal(t, store.HostDown, h.State, "down after %d host-level failures in a row", store.HostDownAfter)
			require.Equal(t, downAt, h.Since)
			require.Equal(t, downAt.Add(store.ProbeDelay(badHostName, 0)), h.NextProbeAt, "the first probe instant, pinned")
			require.Equal(t, 3, h.Held)
			require.Equal(t, sent, bad.requests())

			n := 2 // records per stream
			for k := range 4 {
				n++
				f.append("healthy", 1)
				for _, s := range held {
					f.append(s, 1)
				}
				probeAt := h.NextProbeAt
				before := bad.requests()
				sweep(w1, probeAt.Add(-time.Second))
				require.Equal(t, before, bad.requests(), "window %d: nothing reaches a down host before its probe instant", k)
				require.Equal(t, bodies(1, n), healthy.bodies("/healthy"), "window %d: the healthy receiver keeps delivering", k)

				var wg sync.WaitGroup
				for _, w := range []*push.Worker{w1, w2} {
					wg.Go(func() { sweep(w, probeAt) })
				}
				wg.Wait()
				require.Equal(t, before+1, bad.requests(), "window %d: two workers at the probe instant send one probe", k)
				sweep(w1, probeAt)
				require.Equal(t, before+1, bad.requests(), "window %d: one probe per window", k)
				h = host()
				require.Equal(t, store.HostDown, h.State)
				require.Equal(t, probeAt.Add(store.ProbeDelay(badHostName, k+1)), h.NextProbeAt, "window %d: the next probe instant, pinned", k)
			}
			for _, s := range held {
				st := f.get(s, "r")
				require.False(t, st.Parked, "%s: never parked for its host (MaxAttempts is 2)", s)
				require.Zero(t, st.Attempts, "%s: no attempt charged", s)
			}

			bad.recover()
			probeAt := h.NextProbeAt
			rep = sweep(w1, probeAt)
			require.Equal(t, store.HostUp, host().State, "any answer brings the host up")
			require.Equal(t, 1, rep.Registrations, "the probe alone went through")
			rep = sweep(w1, probeAt.Add(10*time.Minute))
			require.Zero(t, rep.HostFailures)
			for _, s := range held {
				require.Equal(t, bodies(1, n), bad.accepted("/"+s), "%s: everything, in order, once", s)
				st := f.get(s, "r")
				require.Equal(t, uint64(n+1), st.NextSeq)
				require.False(t, st.Parked)
				require.Zero(t, st.Attempts)
			}
			require.Zero(t, host().Held)
		})
	}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// Host health under the daemon loop (Run, on the wall clock): fifty registrations on a host that accepts
// connections and never answers. The dispatcher sends at most MaxPerHost
// at once; each times out, the host goes down after HostDownAfter,
// and from then on its registrations are held, so the host sees the
// connections of the requests sent before it was down (MaxPerHost, and
// one more per earlier failure's freed slot) and at most one probe (its
// first probe instant is seconds away), whatever the number of
// registrations. None is parked or charged; a healthy receiver on another
// host keeps delivering.
func TestRunHoldsADownHostsRegistrations(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("cannot listen on 127.0.0.2, another loopback host (on Linux all of 127.0.0.0/8 is loopback): %v", err)
	}
	silent := &countingListener{Listener: ln}
	var requests atomic.Int64
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		<-r.Context().Done() // never answers: herald's timeout ends it
	})}
	go func() { _ = srv.Serve(silent) }()
	t.Cleanup(func() { _ = srv.Close() })
	healthy := newHealthyHost(t, "127.0.0.1")

	f := newFixture(t)
	const regs = 50
	f.append("quiet", 1)
	for i := range regs {
		f.registerURL("quiet", fmt.Sprintf("silent-%02d", i), fmt.Sprintf("http://%s/inbox/%d", ln.Addr(), i))
	}
	f.append("busy", 1)
	f.registerURL("busy", "healthy", healthy.srv.URL+"/inbox")
	down := make(chan store.Host, regs)
	var failuresMu sync.Mutex
	stateAt := map[int]string{} // the host's state after its nth failure in a row
	hooks := push.Hooks{HostFailure: func(h store.Host) {
		failuresMu.Lock()
		stateAt[h.Failures] = h.State
		failuresMu.Unlock()
		if h.State == store.HostDown {
			down <- h
		}
	}}
	tr := loopback(t, 300*time.Millisecond)
	w := f.workerOn(tr, push.WithOwner("w"), push.WithHooks(hooks))

	d := runDaemon(t, w)
	healthy.expect(t, `/inbox {"n":1}`)
	select {
	case <-down:
	case <-time.After(waitFor):
		t.Fatalf("the silent host was not marked down within %v (%d connections)", waitFor, silent.accepted.Load())
	}
	for i := 2; i <= 3; i++ {
		f.append("busy", 1)
		w.Wake()
		healthy.expect(t, fmt.Sprintf(`/inbox {"n":%d}`, i))
	}
	d.stop(t) // the requests in flight end at their timeout; their turns save
	failuresMu.Lock()
	for n, state := range stateAt { // hooks run concurrently: their order is not the failures'
		want := store.HostUp
		if n >= store.HostDownAfter {
			want = store.HostDown
		}
		require.Equal(t, want, state, "after %d failures in a row: down at the threshold", n)
	}
	failuresMu.Unlock()

	bound := int64(push.DefaultMaxPerHost + store.HostDownAfter - 1 + 1) // before it was down, and one probe
	require.LessOrEqual(t, silent.accepted.Load(), bound, "connections to the down host, of %d registrations", regs)
	require.Equal(t, silent.accepted.Load(), requests.Load(), "one request a connection: each timeout closes its connection")
	list, err := f.store.Hosts(t.Context(), store.HostQuery{Host: store.HostOf("http://" + ln.Addr().String())})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, store.HostDown, list[0].State)
	require.Equal(t, regs, list[0].Held, "every registration of the host is held")
	for i := range regs {
		st := f.get("quiet", fmt.Sprintf("silent-%02d", i))
		require.False(t, st.Parked)
		require.Zero(t, st.Attempts, "no attempt charged for the host")
	}
	require.Equal(t, uint64(4), f.get("busy", "healthy").NextSeq)
}

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
	s := &holdingServer{want: want, allOpen: make(chan struct{})}
	s.holding.Store(true)
	srv := serveOn(t, "127.0.0.4", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if !s.holding.Load() {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if s.open.Add(1) == s.want {
			close(s.allOpen)
		}
		<-r.Context().Done() // herald's side went away
	}))
	s.addr = srv.Listener.Addr().String()
	return s
}

// Host health counts the receiver's failures only: deliveries that herald
// itself abandoned (a sweep whose context was cancelled, a turn cut at its
// lease's end) close their connections, and none of that is charged to
// the host or to a registration. Three registrations of one host are in
// flight when it happens (HostDownAfter failures would mark it
// down); afterwards the host is unmarked, no attempt or evidence is
// stored, and the next sweep delivers everything.
func TestHostHealthNeverCountsWhatHeraldAbandoned(t *testing.T) {
	cases := map[string]struct {
		opts []push.Option
		// abandon runs the sweep and makes herald abandon the deliveries
		// once all are open; it returns RunOnce's error and report.
		abandon func(w *push.Worker, s *holdingServer) (push.SweepReport, error)
		wantErr error
		noRenew bool // the store cannot renew a lease (Store.Renew fails)
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
			// The shortest lease, which the store refuses to renew: its end
			// is 1.8 s of real time away.
			opts:    []push.Option{push.WithLease(2 * time.Second)},
			noRenew: true,
			abandon: func(w *push.Worker, _ *holdingServer) (push.SweepReport, error) {
				return w.RunOnce(t.Context(), at(0), 10)
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := newHoldingServer(t, 3)
			tr := loopback(t, time.Minute)
			f := newFixture(t)
			var st store.Store = f.store
			if c.noRenew {
				st = renewFails{f.store}
			}
			w := f.build(f.store, st, tr, f.proj, c.opts...)
			regs := []string{"a", "b", "c"}
			for _, stream := range regs {
				f.append(stream, 2)
				f.registered(push.Registration{Stream: stream, ID: "r", URL: "http://" + s.addr + "/" + stream})
			}

			rep, err := c.abandon(w, s)
			if c.wantErr != nil {
				require.ErrorIs(t, err, c.wantErr)
			} else {
				require.NoError(t, err, "a turn cut at its lease's end is no error")
			}
			require.Equal(t, int64(3), s.open.Load(), "all three were in flight")
			require.Zero(t, rep.HostFailures+rep.Retries+rep.Parked+rep.Deliveries+rep.Errors, "nothing counted: %+v", rep)
			hosts, err := f.store.Hosts(t.Context(), store.HostQuery{})
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

// Host health is a judgement about the host, not about one path: eight
// registrations whose path answers 503 (no Retry-After) share a host with a
// healthy one. Swept every half second for 30 s, appending to the healthy
// stream before each sweep, the host never goes down, the healthy
// registration gets each record in the sweep after its append, and each
// failing registration bears its own failures (its backoff grows), never
// parked and never charged an attempt.
func TestOnePathsFailuresDoNotTakeItsHostDown(t *testing.T) {
	var mu sync.Mutex
	var good []string
	srv := serveOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(r.URL.Path, "/broken/") {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		good = append(good, string(body))
		mu.Unlock()
	}))
	tr := loopback(t, 5*time.Second)
	f := newFixture(t)
	for i := range 8 {
		stream := fmt.Sprintf("broken-%d", i)
		f.append(stream, 3)
		f.registerURL(stream, "r", fmt.Sprintf("%s/broken/%d", srv.URL, i))
	}
	f.registerURL("healthy", "r", srv.URL+"/inbox")
	w := f.workerOn(tr, push.WithOwner("w"))
	host := store.HostOf(srv.URL)

	for k := 1; k <= 60; k++ {
		f.append("healthy", 1)
		when := t0.Add(time.Duration(k) * 500 * time.Millisecond)
		_, err := w.RunOnce(t.Context(), when, 100)
		require.NoError(t, err)
		mu.Lock()
		require.Equal(t, bodies(1, k), good, "sweep %d: the healthy registration got its record", k)
		mu.Unlock()
		hosts, err := f.store.Hosts(t.Context(), store.HostQuery{Host: host})
		require.NoError(t, err)
		require.Len(t, hosts, 1, "the failures were counted against the host's run")
		require.Equal(t, store.HostUp, hosts[0].State, "sweep %d: the host answers its other path: never down", k)
	}
	for i := range 8 {
		st := f.get(fmt.Sprintf("broken-%d", i), "r")
		require.False(t, st.Parked)
		require.Zero(t, st.Attempts, "no attempt charged: its host may yet be at fault")
		require.Greater(t, st.HostFailures, 3, "it bears its own failures: each one more, its backoff longer")
		require.Equal(t, uint64(1), st.NextSeq)
	}
}

// A registration's own route or credentials failing (its proxy
// unreachable or refusing the CONNECT, its client certificate refused) is
// its failure, never its host's (DESIGN v4, "Host health is a judgement
// about the host"; a tenant may register a proxy): swept at each of its
// retry instants, it is charged an attempt each time, backs off on the
// default schedule and parks at its ceiling, while another registration on
// the same host gets every record in the sweep after its append and the
// host is never charged a failure, never down.
func TestARegistrationsOwnRouteFailingNeverHoldsItsHost(t *testing.T) {
	ca := keytest.NewCA(t)
	refusing := serveOn(t, "127.0.0.3", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream unreachable", http.StatusBadGateway) // to every CONNECT
	}))
	endpoint := func(e transport.Endpoint) push.Config {
		raw, err := json.Marshal(e)
		require.NoError(t, err)
		return raw
	}
	client := func(ca *keytest.CA) push.Config {
		now := time.Now()
		cert, key := ca.Leaf(t, "tenant", false, now.Add(-time.Hour), now.Add(time.Hour))
		return endpoint(transport.Endpoint{ClientCert: cert, ClientKey: key})
	}
	plain := func(t *testing.T) (*hostServer, push.Transport) {
		return newHostServer(t, "127.0.0.1", "ok"), loopback(t, 5*time.Second)
	}
	mutual := func(t *testing.T) (*hostServer, push.Transport) {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", ca.RequireClients(t))
		require.NoError(t, err)
		tr, err := transport.New(transport.Options{AllowPrivateNetwork: true, Timeout: 5 * time.Second, TLSConfig: &tls.Config{RootCAs: ca.Pool}})
		require.NoError(t, err)
		return serveHost(t, ln, "ok"), tr
	}
	for _, c := range []struct {
		name         string
		host         func(*testing.T) (*hostServer, push.Transport)
		good, broken push.Config
		reason       string
	}{
		{"its proxy is unreachable", plain, nil, endpoint(transport.Endpoint{Proxy: "http://" + reserve(t, "127.0.0.2")}), "connection refused"},
		{"its proxy answers the CONNECT 502", plain, nil, endpoint(transport.Endpoint{Proxy: refusing.URL}), `answered "502 Bad Gateway"`},
		{"the receiver refuses its client certificate", mutual, client(ca), client(keytest.NewCA(t)), "client certificate refused by the receiver"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, tr := c.host(t)
			scheme := map[bool]string{false: "http://", true: "https://"}[c.good != nil]
			f := newFixture(t)
			f.append("good", 1)
			f.append("broken", 1)
			f.registered(push.Registration{Stream: "good", ID: "r", URL: scheme + srv.addr + "/good", Config: c.good})
			f.registered(push.Registration{Stream: "broken", ID: "r", URL: scheme + srv.addr + "/broken", Config: c.broken})
			const ceiling = 4
			w := f.workerOn(tr, push.WithMaxAttempts(ceiling))
			host := store.HostOf(scheme + srv.addr)

			requireOwnFailureParks(t, f, w, host, func() []string { return srv.bodies("/good") }, c.reason, ceiling)
			require.Empty(t, srv.bodies("/broken"))
		})
	}
}

// rawHost is a receiver on 127.0.0.1 written on net.Listen: to a request
// for /good it answers 202 and keeps the body; to any other it writes
// broken's bytes (none: it closes without answering).
func rawHost(t *testing.T, broken string) (addr string, good func() []string) {
	var b atomic.Pointer[string]
	b.Store(&broken)
	return rawHostOf(t, &b)
}

// rawHostOf is rawHost whose broken answer a test switches.
func rawHostOf(t *testing.T, broken *atomic.Pointer[string]) (addr string, good func() []string) {
	var mu sync.Mutex
	var kept []string
	addr = rawtest.Serve(t, nil, func(conn net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(conn))
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		answer := *broken.Load()
		if req.URL.Path == "/good" {
			mu.Lock()
			kept = append(kept, string(body))
			mu.Unlock()
			answer = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
		}
		_, _ = io.WriteString(conn, answer)
	})
	return addr, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(kept)
	}
}

// A receiver whose answer is not valid HTTP has answered: the failure is
// the registration's (DESIGN v4, "one path's 5xx is that registration's,
// not its host's"), charged an attempt at each retry instant and parked at
// its ceiling, while another registration of the same host gets every
// record and the host is never charged. A receiver that closes without a
// byte has not answered: that failure is still its host's, and never
// charges or parks the registration. A down host whose probe is answered
// malformed has answered: it is up, its registrations released.
func TestAMalformedAnswerIsItsRegistrationsFailureNotItsHosts(t *testing.T) {
	const ceiling = 4
	t.Run("a malformed header line", func(t *testing.T) {
		addr, good := rawHost(t, "HTTP/1.1 200 OK\r\nBad Header Line\r\n\r\n")
		f := newFixture(t)
		f.append("good", 1)
		f.append("broken", 1)
		f.registerURL("good", "r", "http://"+addr+"/good")
		f.registerURL("broken", "r", "http://"+addr+"/broken")
		w := f.workerOn(loopback(t, 5*time.Second), push.WithMaxAttempts(ceiling))
		requireOwnFailureParks(t, f, w, store.HostOf("http://"+addr), good,
			`answer not valid HTTP: malformed MIME header: missing colon: "Bad Header Line"`, ceiling)
	})
	t.Run("closed without a byte", func(t *testing.T) {
		addr, _ := rawHost(t, "")
		f := newFixture(t)
		f.append("broken", 1)
		f.registerURL("broken", "r", "http://"+addr+"/broken")
		w := f.workerOn(loopback(t, 5*time.Second), push.WithMaxAttempts(ceiling))
		when := at(0)
		for k := 1; k <= ceiling+1; k++ {
			rep := f.sweep(w, when)
			require.Equal(t, 1, rep.HostFailures, "sweep %d: charged to the host", k)
			st := f.get("broken", "r")
			require.Contains(t, st.LastError, "connection closed by the receiver", "sweep %d", k)
			require.False(t, st.Parked, "sweep %d: never parked for its host", k)
			require.Zero(t, st.Attempts, "sweep %d: no attempt charged", k)
			when = st.NextAttemptAt
		}
	})
	t.Run("a down host's probe answered malformed", func(t *testing.T) {
		var broken atomic.Pointer[string]
		broken.Store(new(""))
		addr, _ := rawHostOf(t, &broken)
		f := newFixture(t)
		held := []string{"x0", "x1", "x2"}
		for _, s := range held {
			f.append(s, 1)
			f.registerURL(s, "r", "http://"+addr+"/"+s)
		}
		w := f.workerOn(loopback(t, 5*time.Second), push.WithMaxAttempts(ceiling))
		host := func() store.Host {
			list, err := f.store.Hosts(t.Context(), store.HostQuery{Host: store.HostOf("http://" + addr)})
			require.NoError(t, err)
			require.Len(t, list, 1)
			return list[0]
		}
		require.Equal(t, 3, f.sweep(w, at(0)).HostFailures)
		h := host()
		require.Equal(t, store.HostDown, h.State, "closed without a byte, %d times", store.HostDownAfter)

		broken.Store(new("HTTP/1.1 200 OK\r\nBad Header Line\r\n\r\n"))
		rep := f.sweep(w, h.NextProbeAt)
		require.Equal(t, 1, rep.Registrations, "the probe alone went through")
		require.Zero(t, rep.HostFailures)
		require.Equal(t, store.HostUp, host().State, "an answer, malformed or not, brings the host up")
		require.Zero(t, host().Held, "its registrations are released")
		charged := 0
		for _, s := range held {
			charged += f.get(s, "r").Attempts
		}
		require.Equal(t, 1, charged, "the probe's registration bears its malformed answer")
	})
}

// renewFails is a store that cannot renew a lease.
type renewFails struct{ *memory.Store }

func (renewFails) Renew(context.Context, time.Time, []store.Claim) ([]store.Claim, error) {
	return nil, errors.New("connection refused (the database is down)")
}

// requireOwnFailureParks sweeps w from at(0) while registration broken/r
// fails on its own: each attempt is charged to it (reason, the default
// backoff), none to host, which stays up, while good/r, on the same host,
// gets every record (good returns the bodies it got, one appended after
// each attempt); it parks at ceiling with its cursor intact.
func requireOwnFailureParks(t *testing.T, f *fixture, w *push.Worker, host string, good func() []string, reason string, ceiling int) {
	t.Helper()
	when := at(0)
	for k := 1; k <= ceiling; k++ {
		rep := f.sweep(w, when)
		require.Zero(t, rep.HostFailures, "attempt %d: nothing is charged to the host", k)
		require.Equal(t, bodies(1, k), good(), "attempt %d: the other registration got its records", k)
		hosts, err := f.store.Hosts(t.Context(), store.HostQuery{Host: host})
		require.NoError(t, err)
		for _, h := range hosts {
			require.Equal(t, store.HostUp, h.State, "attempt %d: never down", k)
			require.Zero(t, h.Failures, "attempt %d", k)
		}
		st := f.get("broken", "r")
		require.Zero(t, st.HostFailures, "attempt %d", k)
		require.Contains(t, st.LastError, reason, "attempt %d", k)
		if k == ceiling {
			require.True(t, st.Parked, "parked at its ceiling, as any transient failure of its own")
			require.Equal(t, 1, rep.Parked)
			break
		}
		require.False(t, st.Parked, "attempt %d", k)
		require.Equal(t, k, st.Attempts, "attempt %d: charged to the registration", k)
		require.Equal(t, when.Add(store.Backoff("broken", "r", k-1)), st.NextAttemptAt, "attempt %d: the default backoff", k)
		when = st.NextAttemptAt
		f.append("good", 1)
	}
	require.Equal(t, uint64(1), f.get("broken", "r").NextSeq, "parked with its cursor intact")
}
