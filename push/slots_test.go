package push_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/push/internal/hosts"
)

// Invariant (v4, fair share): a message that waits SlowAfter for its answer
// gives its turn's slot back, so slow receivers never hold a healthy one's.
// With MaxInFlight 2, six slow receivers on six hosts, each with a backlog,
// have a request open at once (four more than the slots), and a healthy
// receiver on a seventh host gets every record appended meanwhile; also
// when the slow receivers outnumber the slow budget (MaxSlow 1), whose
// turns past it still leave their slots.
func TestSlowReceiversNeverHoldAHealthyReceiversSlot(t *testing.T) {
	t.Run("within the slow budget", func(t *testing.T) { slowReceiversBeside(t, push.DefaultMaxSlow) })
	t.Run("past the slow budget", func(t *testing.T) { slowReceiversBeside(t, 1) })
}

func slowReceiversBeside(t *testing.T, maxSlow int) {
	const slowHosts = 6
	f := newFixture(t)
	var slow []*silentHost
	for i := range slowHosts {
		h := newSilentHost(t, fmt.Sprintf("127.0.0.%d", 2+i), 2*slowHosts)
		slow = append(slow, h)
		stream := fmt.Sprintf("slow-%d", i)
		f.append(stream, 2)
		f.registerURL(stream, "r", h.srv.URL+"/inbox")
	}
	healthy := newHealthyHost(t, "127.0.0.1")
	f.registerURL("busy", "healthy", healthy.srv.URL+"/inbox")
	w := f.workerOn(loopback(t, time.Minute), push.WithOwner("w"), push.WithMaxInFlight(2), push.WithMaxSlow(maxSlow))

	d := runDaemon(t, w)
	for _, h := range slow {
		select {
		case <-h.reached(1):
		case <-time.After(waitFor):
			t.Fatalf("only some slow receivers got a request: the slow ones kept their slots")
		}
	}
	for i := 1; i <= 3; i++ {
		f.append("busy", 1)
		w.Wake()
		healthy.expect(t, fmt.Sprintf(`/inbox {"n":%d}`, i))
	}
	for _, h := range slow {
		require.Equal(t, int32(1), h.open.Load(), "each slow receiver still has its first request open")
	}

	for _, h := range slow {
		h.unblock()
	}
	d.stop(t)
	for i := range slowHosts {
		require.GreaterOrEqual(t, f.get(fmt.Sprintf("slow-%d", i), "r").NextSeq, uint64(2), "the slow receivers progress")
	}
}

// A host whose message went slow takes no slot of the healthy receivers'
// again: its next claim waits for the slow budget. With MaxInFlight 1 and
// MaxSlow 1, a second registration of a silent host, appended to once the
// first went slow, sends nothing while the first holds the slow budget, and
// a healthy receiver gets every record meanwhile; once the host answers,
// the second is served.
func TestASlowHostsNextClaimWaitsForTheSlowBudget(t *testing.T) {
	f := newFixture(t)
	healthy := newHealthyHost(t, "127.0.0.1")
	f.registerURL("busy", "healthy", healthy.srv.URL+"/inbox")
	silent, w, d := secondOfASlowHost(t, f, 1)
	for i := 1; i <= 3; i++ {
		f.append("busy", 1)
		w.Wake()
		healthy.expect(t, fmt.Sprintf(`/inbox {"n":%d}`, i))
	}
	require.Equal(t, int32(1), silent.open.Load(), "the slow host's second registration waited for the slow budget")

	silent.unblock()
	select {
	case <-silent.all:
	case <-time.After(waitFor):
		t.Fatal("the slow host's second registration was never served")
	}
	d.stop(t)
	require.Equal(t, uint64(2), f.get("b", "r").NextSeq)
}

// A claim of a host whose message went slow starts in the slow budget, not
// in a regular slot it would hold until its own message went slow: with
// MaxSlow 2, the second registration of a silent host is counted slow as
// its request arrives.
func TestASlowHostsClaimStartsInTheSlowBudget(t *testing.T) {
	f := newFixture(t)
	silent, w, d := secondOfASlowHost(t, f, 2)
	w.Wake()
	receive(t, silent.reached(2))
	require.Equal(t, 2, w.Load().Slow, "the second registration's turn runs in the slow budget from its start")
	silent.unblock()
	d.stop(t)
	require.Equal(t, uint64(2), f.get("b", "r").NextSeq)
}

// secondOfASlowHost runs a worker of one regular slot and maxSlow slow ones
// over two registrations of a silent host, a and b: it returns once a's
// message went slow, with a record appended to b.
func secondOfASlowHost(t *testing.T, f *fixture, maxSlow int) (*silentHost, *push.Worker, *daemon) {
	silent := newSilentHost(t, "127.0.0.2", 2)
	f.append("a", 1)
	f.registerURL("a", "r", silent.srv.URL+"/inbox")
	f.registerURL("b", "r", silent.srv.URL+"/inbox")
	wentSlow := make(chan string, 10)
	w := f.workerOn(loopback(t, time.Minute), push.WithOwner("w"), push.WithMaxInFlight(1), push.WithMaxSlow(maxSlow),
		push.WithHooks(push.Hooks{Slow: func(r push.Registration, _ bool) { wentSlow <- r.Stream }}))
	d := runDaemon(t, w)
	require.Equal(t, "a", receive(t, wentSlow))
	f.append("b", 1)
	return silent, w, d
}

// With no slow budget (MaxSlow 0), a turn whose message went slow keeps its
// slot only until that message's answer: it gives the slot to the claim
// that waits before it sends its next record.
func TestASlowTurnWithNoSlowBudgetYieldsAtItsNextRecord(t *testing.T) {
	f := newFixture(t)
	order := make(chan string, 10)
	first := make(chan struct{})
	slow := serveOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if string(b) == `{"n":1}` {
			<-first
		}
		order <- "slow " + string(b)
	}))
	healthy := serveOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		order <- "healthy " + string(b)
	}))
	f.append("slow", 2)
	f.registerURL("slow", "r", slow.URL+"/inbox")
	f.registerURL("busy", "healthy", healthy.URL+"/inbox")
	wentSlow := make(chan bool, 10)
	claims := make(chan int, 100)
	w, err := push.NewWorker(f.store, f.store, loopback(t, time.Minute), f.proj, push.WithOwner("w"), push.WithMaxInFlight(1), push.WithMaxSlow(0),
		push.WithHooks(push.Hooks{
			Claim: func(_ time.Time, n int, _ error) { claims <- n },
			Slow:  func(_ push.Registration, yields bool) { wentSlow <- yields },
		}))
	require.NoError(t, err)

	d := runDaemon(t, w)
	require.True(t, receive(t, wentSlow), "with no slow budget the slow turn yields")
	for len(claims) > 0 { // the slow registration's own claim, told before its turn started
		<-claims
	}
	f.append("busy", 1)
	w.Wake()
	for receive(t, claims) != 1 { // the healthy registration is claimed and waits for the one slot
	}
	close(first)
	got := []string{<-order, <-order, <-order}
	require.Equal(t, []string{`slow {"n":1}`, `healthy {"n":1}`, `slow {"n":2}`}, got,
		"the slow turn gave its slot to the waiting claim before its next record")
	d.stop(t)
}

// A turn's lease is renewed while it runs, so a receiver may take longer
// than the lease: with the shortest lease (2 s), a request held past it
// is not abandoned, no other worker claims the registration meanwhile, and
// the answer advances the cursor.
func TestALeaseIsRenewedWhileItsTurnRuns(t *testing.T) {
	f := newFixture(t)
	s := newSilentHost(t, "127.0.0.2", 1)
	f.append("s", 1)
	f.registerURL("s", "r", s.srv.URL+"/inbox")
	st := newRenewals(f.store)
	w1 := f.build(f.store, st, loopback(t, time.Minute), f.proj, push.WithOwner("w1"), push.WithLease(2*time.Second))
	w2 := f.workerOn(loopback(t, time.Minute), push.WithOwner("w2"), push.WithLease(2*time.Second))

	done := make(chan push.SweepReport, 1)
	go func() {
		rep, err := w1.RunOnce(context.Background(), at(0), 10)
		assert.NoError(t, err)
		done <- rep
	}()
	<-s.reached(1)
	started := time.Now()
	for renewals := 0; renewals < 4 || time.Since(started) < 2*time.Second; renewals++ {
		require.Len(t, receive(t, st.claims), 1, "the turn's lease is renewed")
	}
	rep, err := w2.RunOnce(t.Context(), at(2), 10)
	require.NoError(t, err)
	require.Zero(t, rep.Registrations, "past the first lease's end on both clocks, the renewed lease still hides it")
	s.unblock()
	rep = receive(t, done)
	require.Equal(t, 1, rep.Deliveries, "the answer came past the first lease's end and was kept")
	require.Zero(t, rep.LeasesLost)
	require.Equal(t, uint64(2), f.get("s", "r").NextSeq)
}

// An update of a registration (here its URL) takes the lease from its turn
// in flight: the turn stops at its next renewal, abandoning the request it
// waited on, not at its lease's end, and saves nothing; the records go out
// under the new URL once that lease has ended, none beside the old turn.
func TestAnUpdateStopsTheTurnInFlight(t *testing.T) {
	f := newFixture(t)
	old := newSilentHost(t, "127.0.0.2", 1)
	var (
		mu  sync.Mutex
		got []int
	)
	moved := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if n, ok := recordN(w, r); ok {
			mu.Lock()
			got = append(got, n)
			mu.Unlock()
		}
	})
	f.append("s", 3)
	f.registerURL("s", "r", old.srv.URL+"/inbox")
	st := newRenewals(f.store)
	w := f.build(f.store, st, loopback(t, time.Minute), f.proj, push.WithLease(3*time.Second))

	done := make(chan push.SweepReport, 1)
	go func() {
		rep, err := w.RunOnce(context.Background(), at(0), 10)
		assert.NoError(t, err)
		done <- rep
	}()
	receive(t, old.reached(1))
	f.registerURL("s", "r", moved.URL+"/inbox")
	for i := 0; len(receive(t, st.claims)) != 0; i++ { // renewals before the update
		require.Less(t, i, 3, "a renewal after the update finds the lease taken")
	}
	rep := receive(t, done)
	require.Equal(t, 1, rep.LeasesLost, "the turn's save was fenced out")
	require.Zero(t, rep.Deliveries)
	require.Contains(t, f.logs.String(), "lease was taken", "the renewal that found the lease taken ended the turn")
	require.NotContains(t, f.logs.String(), "lease is ending", "not the lease's end")
	require.Equal(t, uint64(1), f.get("s", "r").NextSeq)

	require.Zero(t, f.sweep(w, at(2)).Registrations, "the taken lease's end still holds the registration")
	rep = f.sweep(w, at(3))
	require.Equal(t, 3, rep.Deliveries)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{1, 2, 3}, got, "every record at the new URL, in order")
	require.Equal(t, uint64(4), f.get("s", "r").NextSeq)
}

// A claim made while its host was slow waits for the slow budget only as
// long as the host stays slow (hosts.SlowMemory): with MaxInFlight 1 and
// MaxSlow 1, a silent host holding the slow budget, and a second host whose
// one message went slow, that host's next record goes out in the free
// regular slot once its mark expires, not when the silent host's request
// ends. The worker is woken until then: the mark's end is no event of its.
func TestASlowHostsWaitingClaimTakesARegularSlotOnceItsMarkExpires(t *testing.T) {
	defer func(m time.Duration) { hosts.SlowMemory = m }(hosts.SlowMemory)
	hosts.SlowMemory = 2 * time.Second
	f := newFixture(t)
	silent := newSilentHost(t, "127.0.0.2", 1)
	defer silent.unblock()
	wentSlow := make(chan struct{})
	slowed := sync.OnceFunc(func() { close(wentSlow) })
	got := make(chan string, 10)
	once := serveOn(t, "127.0.0.3", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if string(b) == `{"n":1}` {
			<-wentSlow // its first message waits SlowAfter, so its host is marked slow
		}
		got <- string(b)
	}))
	f.append("s", 1)
	f.registerURL("s", "r", silent.srv.URL+"/inbox")
	f.append("h", 1)
	f.registerURL("h", "r", once.URL+"/inbox")
	turns := make(chan struct{}, 10)
	silentSlow := make(chan struct{}, 10)
	w := f.workerOn(loopback(t, time.Minute), push.WithOwner("w"), push.WithMaxInFlight(1), push.WithMaxSlow(1),
		push.WithHooks(push.Hooks{
			Slow: func(r push.Registration, _ bool) {
				if r.Stream == "h" {
					slowed()
				} else {
					silentSlow <- struct{}{}
				}
			},
			Turn: func(time.Time, push.SweepReport, time.Duration, error) { turns <- struct{}{} },
		}))
	d := runDaemon(t, w)
	require.Equal(t, `{"n":1}`, receive(t, got))
	receive(t, turns)      // h's turn ended (the silent host's never does): its host is slow
	receive(t, silentSlow) // the silent host's turn holds the slow budget

	f.append("h", 1)
	wake := time.NewTicker(100 * time.Millisecond)
	defer wake.Stop()
	deadline := time.After(hosts.SlowMemory + waitFor)
	for sent := false; !sent; {
		w.Wake()
		select {
		case b := <-got:
			require.Equal(t, `{"n":2}`, b)
			sent = true
		case <-wake.C:
		case <-deadline:
			t.Fatal("the claim made while its host was slow still waits for the slow budget after the mark expired")
		}
	}
	require.Equal(t, int32(1), silent.open.Load(), "the silent host still holds the slow budget")
	silent.unblock()
	d.stop(t)
}

// A claim whose lease an update takes while it waits for a slot starts
// cancelled: it sends nothing under the settings it was claimed with, and
// the record goes out under the update's once the lease has ended. With one
// slot, b is claimed behind a's silent request; b's URL is changed and a
// renewal finds b's lease taken; when a's answer frees the slot, b's turn
// sends nothing to its old URL.
func TestAClaimWhoseLeaseWasTakenBeforeItStartedSendsNothing(t *testing.T) {
	f := newFixture(t)
	silent := newSilentHost(t, "127.0.0.2", 1)
	var oldHits atomic.Int32
	old := serveOn(t, "127.0.0.3", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { oldHits.Add(1) }))
	moved := make(chan struct{}, 10)
	movedTo := serveOn(t, "127.0.0.4", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { moved <- struct{}{} }))
	f.append("a", 1)
	f.registerURL("a", "r", silent.srv.URL+"/inbox")
	st := newRenewals(f.store)
	claims := make(chan int, 100)
	lost := make(chan struct{}, 10)
	w := f.build(f.store, st, loopback(t, time.Minute), f.proj, push.WithLease(3*time.Second), push.WithMaxInFlight(1), push.WithMaxSlow(0),
		push.WithHooks(push.Hooks{
			Claim: func(_ time.Time, n int, _ error) { claims <- n },
			Turn: func(_ time.Time, r push.SweepReport, _ time.Duration, _ error) {
				if r.LeasesLost > 0 {
					lost <- struct{}{}
				}
			},
		}))

	d := runDaemon(t, w)
	receive(t, silent.reached(1)) // a holds the one slot
	for len(claims) > 0 {
		<-claims
	}
	f.append("b", 1)
	f.registerURL("b", "r", old.URL+"/inbox")
	w.Wake()
	for receive(t, claims) != 1 { // b is claimed and waits for the slot
	}
	for len(receive(t, st.claims)) != 2 { // a renewal of both claims
	}
	f.registerURL("b", "r", movedTo.URL+"/inbox")
	for i := 0; len(receive(t, st.claims)) != 1; i++ { // a renewal after the update renews a's claim alone
		require.Less(t, i, 3, "a renewal after the update finds b's lease taken")
	}
	// The renewer marks b taken after Renew returned; its next renewal
	// comes after that.
	require.Len(t, receive(t, st.claims), 1)
	silent.unblock()
	receive(t, lost) // b's turn started cancelled
	d.stop(t)
	require.Zero(t, oldHits.Load(), "nothing went to b's old URL")

	require.Equal(t, 1, f.sweep(w, time.Now().Add(time.Minute)).Deliveries, "b, once its taken lease has ended")
	receive(t, moved)
	require.Zero(t, oldHits.Load())
	require.Equal(t, uint64(2), f.get("b", "r").NextSeq)
}
