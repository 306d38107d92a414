package push_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
)

// Invariant (v4, fair share): a message that waits SlowAfter for its answer
// gives its turn's slot back, so slow receivers never hold a healthy one's.
// With MaxInFlight 2, six slow receivers on six hosts, each with a backlog,
// have a request open at once (four more than the slots), and a healthy
// receiver on a seventh host gets every record appended meanwhile.
func TestSlowReceiversNeverHoldAHealthyReceiversSlot(t *testing.T) {
	const slowHosts = 6
	f := newFixture(t)
	var slow []*silentHost
	for i := range slowHosts {
		h := newSilentHost(t, fmt.Sprintf("127.0.0.%d", 2+i), 2*slowHosts)
		slow = append(slow, h)
		stream := fmt.Sprintf("slow-%d", i)
		f.append(stream, 2)
		registerURL(t, f.store, stream, "r", h.srv.URL+"/inbox")
	}
	healthy := newHealthyHost(t, "127.0.0.1")
	registerURL(t, f.store, "busy", "healthy", healthy.srv.URL+"/inbox")
	w, err := push.NewWorker(f.store, f.store, loopbackTransport(t), f.proj, push.WithOwner("w"), push.WithMaxInFlight(2))
	require.NoError(t, err)

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
	registerURL(t, f.store, "slow", "r", slow.URL+"/inbox")
	registerURL(t, f.store, "busy", "healthy", healthy.URL+"/inbox")
	wentSlow := make(chan bool, 10)
	claims := make(chan int, 100)
	w, err := push.NewWorker(f.store, f.store, loopbackTransport(t), f.proj, push.WithOwner("w"), push.WithMaxInFlight(1), push.WithMaxSlow(0),
		push.WithHooks(push.Hooks{
			Claim: func(_ time.Time, n int, _ error) { claims <- n },
			Slow:  func(_ push.Registration, yields bool) { wentSlow <- yields },
		}))
	require.NoError(t, err)

	d := runDaemon(t, w)
	require.True(t, receive(t, wentSlow), "with no slow budget the slow turn yields")
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

// receive waits for one value of ch.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("no signal within %v", waitFor)
		panic("unreachable")
	}
}
