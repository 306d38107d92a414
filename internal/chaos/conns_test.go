package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// envClient makes the test binary a client process (TestMain): it opens
// clientRequests connections to the address the variable holds, writes one
// request on each, opens clientIdle more that send nothing, says "sent" on
// stdout and waits to be killed.
const (
	envClient      = "HERALD_CHAOS_TEST_CLIENT"
	clientRequests = 3
	clientIdle     = 1
)

func clientMain(addr string) int {
	var conns []net.Conn // kept open until the process dies
	for i := 0; i < clientRequests+clientIdle; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		conns = append(conns, c)
		if i < clientRequests {
			if _, err := fmt.Fprintf(c, "POST /r/%d HTTP/1.1\r\nHost: receiver\r\nContent-Length: 2\r\n\r\n{}", i); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	fmt.Println("sent")
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed
	_ = conns
	return 0
}

// TestKillDrainedWaitsForTheDeadProcesssRequests: a process writes
// requests to a receiver and is killed before the receiver answered them;
// killDrained returns only once the receiver served every one of them and
// closed every connection of the dead process, and it does not wait for
// the connections of other processes (this test's own, kept open).
func TestKillDrainedWaitsForTheDeadProcesssRequests(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{}, clientRequests+1)
	var served atomic.Int32
	watch := newConnWatch()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/live" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		entered <- struct{}{}
		<-gate
		served.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = watch.hook
	srv.Start()
	defer srv.Close()
	var opened sync.Once
	open := func() { opened.Do(func() { close(gate) }) }
	defer open() // before srv.Close, which waits for the handlers

	// A live client of the same receiver, its connection kept alive.
	live := srv.Client()
	res, err := live.Get(srv.URL + "/live")
	require.NoError(t, err)
	res.Body.Close()

	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, "-test.run", "^$")
	cmd.Env = append(os.Environ(), envClient+"="+srv.Listener.Addr().String())
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	p := &proc{name: "client", cmd: cmd, exited: make(chan struct{})}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "sent\n", line)
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	for i := 0; i < clientRequests; i++ {
		<-entered // every request is being served: its handler waits at the gate
	}

	clients, err := connsTo(p.pid(), srv.Listener.Addr().String())
	require.NoError(t, err)
	require.Len(t, clients, clientRequests+clientIdle, "connsTo finds the client's connections to the receiver, and only those")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- killDrained(ctx, p, watch, srv.Listener.Addr().String(), nil) }()
	<-p.exited
	select {
	case err := <-drained:
		t.Fatalf("killDrained returned (%v) while the receiver was still serving the dead process's requests", err)
	default:
	}
	open()
	require.NoError(t, <-drained)
	require.EqualValues(t, clientRequests, served.Load(), "every request of the dead process was served before killDrained returned")
}

// TestConnWatch: waitClosed waits for closes after the mark only, and says
// which connections are still open when its context ends.
func TestConnWatch(t *testing.T) {
	w := newConnWatch()
	conn := func(addr string) net.Conn { return fakeConn{addr: addr} }
	w.hook(conn("127.0.0.1:1"), http.StateClosed) // before the mark
	mark := w.mark()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	err := w.waitClosed(done, mark, []string{"127.0.0.1:1", "127.0.0.1:2"})
	require.ErrorContains(t, err, "2 connections of a killed process open (127.0.0.1:1, 127.0.0.1:2)")
	w.hook(conn("127.0.0.1:2"), http.StateActive) // not a close
	w.hook(conn("127.0.0.1:2"), http.StateClosed)
	err = w.waitClosed(done, mark, []string{"127.0.0.1:1", "127.0.0.1:2"})
	require.ErrorContains(t, err, "1 connections of a killed process open (127.0.0.1:1)")
	w.hook(conn("127.0.0.1:1"), http.StateHijacked)
	require.NoError(t, w.waitClosed(done, mark, []string{"127.0.0.1:1", "127.0.0.1:2"}))
	require.NoError(t, w.waitClosed(done, mark, nil))
}

// fakeConn is a net.Conn that only has a remote address, for connWatch.hook.
type fakeConn struct {
	net.Conn
	addr string
}

func (c fakeConn) RemoteAddr() net.Addr {
	a, err := net.ResolveTCPAddr("tcp", c.addr)
	if err != nil {
		panic(err)
	}
	return a
}
