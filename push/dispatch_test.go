package push_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/logtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// silentHost accepts requests and answers none until the test releases
// them; it counts the requests open at once.
type silentHost struct {
	srv      *httptest.Server
	release  chan struct{}
	released atomic.Bool
	open     atomic.Int32
	peak     atomic.Int32
	answered atomic.Int32
	all      chan struct{} // closed when want requests were answered
	want     int32
	mu       sync.Mutex
	waiters  map[int32]chan struct{} // closed when open first reaches the key
}

func newSilentHost(t *testing.T, ip string, want int32) *silentHost {
	s := &silentHost{release: make(chan struct{}), waiters: map[int32]chan struct{}{}, all: make(chan struct{}), want: want}
	s.srv = serveOn(t, ip, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n := s.open.Add(1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		s.mu.Lock()
		if ch, ok := s.waiters[n]; ok {
			close(ch)
			delete(s.waiters, n)
		}
		s.mu.Unlock()
		select {
		case <-s.release:
		case <-r.Context().Done():
		}
		s.open.Add(-1)
		w.WriteHeader(http.StatusOK)
		if s.answered.Add(1) == s.want {
			close(s.all)
		}
	}))
	t.Cleanup(s.unblock) // before the server's Close, which waits for handlers
	return s
}

// reached returns a channel closed when n requests are open at once.
func (s *silentHost) reached(n int32) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	if s.peak.Load() >= n {
		close(ch)
		return ch
	}
	s.waiters[n] = ch
	return ch
}

func (s *silentHost) unblock() {
	if s.released.CompareAndSwap(false, true) {
		close(s.release)
	}
}

// healthyHost answers 200 at once and signals every body it got.
type healthyHost struct {
	srv *httptest.Server
	got chan string
}

func newHealthyHost(t *testing.T, ip string) *healthyHost {
	h := &healthyHost{got: make(chan string, 1000)}
	h.srv = serveOn(t, ip, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.got <- r.URL.Path + " " + string(b)
		w.WriteHeader(http.StatusOK)
	}))
	return h
}

// expect waits for the bodies want, in order.
func (h *healthyHost) expect(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case g := <-h.got:
			require.Equal(t, w, g)
		case <-time.After(waitFor):
			t.Fatalf("the healthy receiver did not get %q within %v", w, waitFor)
		}
	}
}

// keepsGetting has the healthy receiver get stream "busy"'s records 1 to n,
// each appended and woken for in turn, while the silent host still holds
// the requests it took.
func (h *healthyHost) keepsGetting(t *testing.T, f *fixture, w *push.Worker, silent *silentHost, n int) {
	t.Helper()
	h.expect(t, `/inbox {"n":1}`)
	for i := 2; i <= n; i++ {
		f.append("busy", 1)
		w.Wake()
		h.expect(t, fmt.Sprintf(`/inbox {"n":%d}`, i))
	}
	require.False(t, silent.released.Load())
}

// Invariant (v2): a receiver's silence delays only its own registrations.
// With the daemon loop running, a healthy receiver on another host gets
// the records appended after a silent host took its request, while that
// request is still open.
func TestSilentHostDelaysOnlyItself(t *testing.T) {
	silent := newSilentHost(t, "127.0.0.1", 1)
	healthy := newHealthyHost(t, "127.0.0.2")
	f := newFixture(t)
	f.append("quiet", 1)
	f.registerURL("quiet", "silent", silent.srv.URL+"/inbox")
	f.append("busy", 1)
	f.registerURL("busy", "healthy", healthy.srv.URL+"/inbox")
	w := f.workerOn(loopback(t, time.Minute), push.WithOwner("w"))

	d := runDaemon(t, w)
	<-silent.reached(1)
	healthy.keepsGetting(t, f, w, silent, 4)
	require.Equal(t, int32(1), silent.open.Load(), "the silent request is still open")

	silent.unblock()
	d.stop(t)
	require.Equal(t, uint64(5), f.get("busy", "healthy").NextSeq)
	require.Equal(t, uint64(2), f.get("quiet", "silent").NextSeq, "the silent host answered once released")
}

// Fifty registrations on one silent host hold at most MaxPerHost of the
// worker's slots and requests: the host never has more than MaxPerHost
// requests open, and a healthy receiver on another host still gets its
// records while they are. Once the host answers, all fifty deliver, still
// never more than MaxPerHost at once.
func TestSilentHostGetsAtMostMaxPerHost(t *testing.T) {
	silent := newSilentHost(t, "127.0.0.1", 50)
	healthy := newHealthyHost(t, "127.0.0.2")
	f := newFixture(t)
	f.append("quiet", 1)
	for i := range 50 {
		f.registerURL("quiet", fmt.Sprintf("silent-%02d", i), fmt.Sprintf("%s/inbox/%d", silent.srv.URL, i))
	}
	f.append("busy", 1)
	f.registerURL("busy", "healthy", healthy.srv.URL+"/inbox")
	w := f.workerOn(loopback(t, time.Minute), push.WithOwner("w"))

	d := runDaemon(t, w)
	<-silent.reached(push.DefaultMaxPerHost)
	healthy.keepsGetting(t, f, w, silent, 3)
	require.Equal(t, int32(push.DefaultMaxPerHost), silent.open.Load())
	require.Equal(t, 1, w.Load().HostsAtCap, "the silent host holds MaxPerHost slots, no more")

	silent.unblock() // the host answers: turn ends refill the slots, no wake needed
	select {
	case <-silent.all:
	case <-time.After(waitFor):
		t.Fatalf("the silent host answered %d of 50 requests within %v", silent.answered.Load(), waitFor)
	}
	d.stop(t) // lets the last turns save
	for i := range 50 {
		require.Equal(t, uint64(2), f.get("quiet", fmt.Sprintf("silent-%02d", i)).NextSeq)
	}
	require.Equal(t, int32(50), silent.answered.Load(), "once each")
	require.LessOrEqual(t, silent.peak.Load(), int32(push.DefaultMaxPerHost), "the silent host never had more than MaxPerHost requests open")
}

// Overlapping RunOnce calls, on one worker and on another, deliver each
// record once per registration: the leases fence them.
func TestOverlappingSweepsDeliverOnce(t *testing.T) {
	f := newFixture(t)
	f.append("s", 3)
	const regs = 24
	for i := range regs {
		f.registerURL("s", fmt.Sprintf("r%02d", i), fmt.Sprintf("https://r%02d.receiver.example/inbox", i))
	}
	hold := make(chan struct{})
	held := make(chan struct{}, regs)
	var mu sync.Mutex
	count := map[string]int{}
	tr := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		mu.Lock()
		count[reg.ID+" "+msg.ID]++
		first := count[reg.ID+" "+msg.ID] == 1 && msg.ID == "s#1"
		mu.Unlock()
		if first {
			held <- struct{}{}
			<-hold
		}
		return accepted(), nil
	})
	w1 := f.workerOn(tr, push.WithOwner("w1"), push.WithMaxInFlight(regs))
	w2 := f.workerOn(tr, push.WithOwner("w2"), push.WithMaxInFlight(regs))

	reps := make(chan push.SweepReport, 3)
	sweep := func(w *push.Worker, limit int) {
		rep, err := w.RunOnce(context.Background(), at(0), limit)
		require.NoError(t, err)
		reps <- rep
	}
	go sweep(w1, 8)
	for range 8 {
		<-held // w1's first sweep holds 8 turns on their first record
	}
	go sweep(w1, 8) // the same worker again, beside it
	for range 8 {
		<-held
	}
	go sweep(w2, regs) // another worker: only the 8 nobody holds are left
	for range 8 {
		<-held
	}
	close(hold)
	total := 0
	for range 3 {
		rep := <-reps
		require.Equal(t, 8, rep.Registrations)
		total += rep.Deliveries
	}
	require.Equal(t, regs*3, total)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, count, regs*3)
	for k, n := range count {
		require.Equal(t, 1, n, "%s was sent %d times", k, n)
	}
	for i := range regs {
		require.Equal(t, uint64(4), f.get("s", fmt.Sprintf("r%02d", i)).NextSeq)
	}
}

// A sweep serves every registration it claimed, but no more of one host at
// once than MaxPerHost: a host at its cap is passed over, so that its
// registrations never hold the slots another host's could use.
func TestSweepServesAHostAtMostMaxPerHostAtOnce(t *testing.T) {
	f := newFixture(t)
	f.append("s", 1)
	for i := range 10 {
		f.registerURL("s", fmt.Sprintf("a%02d", i), fmt.Sprintf("https://a.example/inbox/%d", i))
	}
	f.registerURL("s", "z-other", "https://b.example/inbox")
	otherDone := make(chan struct{})
	var open, peak atomic.Int32
	tr := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		if reg.Host() == "b.example:443" {
			close(otherDone)
			return accepted(), nil
		}
		n := open.Add(1)
		defer open.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		select {
		case <-otherDone: // a.example answers only once b.example was served
		case <-time.After(waitFor):
			return push.Outcome{}, fmt.Errorf("b.example was never served while a.example's turns ran")
		}
		return accepted(), nil
	})
	w := f.workerOn(tr, push.WithOwner("w"), push.WithMaxInFlight(8), push.WithMaxPerHost(2))
	rep, err := w.RunOnce(t.Context(), at(0), 100)
	require.NoError(t, err)
	require.Equal(t, push.SweepReport{Registrations: 11, Records: 11, Deliveries: 11}, rep)
	require.LessOrEqual(t, peak.Load(), int32(2), "a.example never had more than two requests open")
}

// Run holds some claims ready beside the turns it runs; when it stops it
// gives back those it never started, so that another worker may serve them
// at once rather than after their lease.
func TestRunReleasesUnstartedClaimsWhenItStops(t *testing.T) {
	f := newFixture(t)
	f.append("s", 1)
	for i := range 3 {
		f.registerURL("s", fmt.Sprintf("r%d", i), fmt.Sprintf("https://r%d.example/inbox", i))
	}
	entered, release := make(chan string, 3), make(chan struct{})
	tr := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		entered <- reg.ID
		<-release
		return accepted(), nil
	})
	w := f.workerOn(tr, push.WithOwner("w"), push.WithMaxInFlight(1))
	d := runDaemon(t, w)
	first := <-entered
	leased := 0
	for i := range 3 {
		if st := f.get("s", fmt.Sprintf("r%d", i)); st.LeaseOwner != "" {
			leased++
		}
	}
	require.Equal(t, 2, leased, "one turn running and one claim ready: twice MaxInFlight")
	d.cancel()
	close(release)
	d.stop(t)
	for i := range 3 {
		id := fmt.Sprintf("r%d", i)
		st := f.get("s", id)
		require.Empty(t, st.LeaseOwner, "%s: no lease left behind", id)
		if id == first {
			require.Equal(t, uint64(2), st.NextSeq)
		} else {
			require.Equal(t, uint64(1), st.NextSeq, "%s was never started", id)
		}
	}
	require.Len(t, entered, 0, "nothing started after the stop")
}

// failingDue is a store whose Due fails while failing is set, and signals
// every call.
type failingDue struct {
	*memory.Store
	failing atomic.Bool
	calls   chan error
}

func (s *failingDue) Due(ctx context.Context, q store.DueQuery) (store.DueBatch, error) {
	if s.failing.Load() {
		err := fmt.Errorf("connection refused (the database is down)")
		s.calls <- err
		return store.DueBatch{}, err
	}
	b, err := s.Store.Due(ctx, q)
	s.calls <- err
	return b, err
}

// A store outage does not stop the loop: the dispatcher logs the first
// error, not every retry, claims again on a wake (or the interval), and
// says when claims recover; then it delivers as before.
func TestRunRidesOutAStoreOutage(t *testing.T) {
	f := newFixture(t)
	f.append("s", 1)
	f.register("s", "r")
	st := &failingDue{Store: f.store, calls: make(chan error, 100)}
	st.failing.Store(true)
	delivered := make(chan string, 10)
	tr := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		delivered <- msg.ID
		return accepted(), nil
	})
	var logs logtest.Buffer
	w := f.build(f.store, st, tr, f.proj, push.WithOwner("w"), push.WithLogger(logs.Logger()))
	d := runDaemon(t, w)
	for range 3 {
		require.Error(t, <-st.calls, "the claim fails while the store is down")
		w.Wake()
	}
	st.failing.Store(false)
	for err := range st.calls {
		if err == nil {
			break
		}
		w.Wake()
	}
	select {
	case id := <-delivered:
		require.Equal(t, "s#1", id)
	case <-time.After(waitFor):
		t.Fatal("nothing was delivered after the store came back")
	}
	d.stop(t)
	out := logs.String()
	require.Equal(t, 1, strings.Count(out, "level=ERROR"), "one error logged for the outage, not one per retry:\n%s", out)
	require.Contains(t, out, "claims recovered")
	require.Equal(t, uint64(2), f.get("s", "r").NextSeq)
}
