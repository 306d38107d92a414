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

	"errors"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
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

// A process killed with requests in flight has often written them whole:
// they wait in the receiver's socket buffers, and the receiver reads,
// acknowledges and records them after the process is gone, at a loaded
// machine's pace (up to seconds later, after several more kills). A ledger
// that went on to the next kill at once would record those
// acknowledgements in a later kill's epoch, as if a live worker had sent
// them after (see Attribute). killDrained therefore ends a kill only once
// the receiver has closed every connection the dead process had open to
// it: an HTTP/1 server closes a connection only after serving each request
// that came in on it, and a dead client's connections all end (its kernel
// closed them).

// killDrained stops p (SIGSTOP), sends it SIGKILL and waits until it is
// gone and the receiver whose connections w watches, listening at server,
// has served every request p sent it and closed every connection p had
// open to it (or ctx ends). Once p is stopped it sends nothing more: then
// stopped, if not nil, is called (to count its death and read what it
// held as it died), and p's connections are read while it can open no
// other.
func killDrained(ctx context.Context, p *proc, w *connWatch, server string, stopped func() error) error {
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stop %s (pid %d): %w", p.name, p.pid(), err)
	}
	mark := w.mark()
	var err error
	if stopped != nil {
		err = stopped()
	}
	clients, cerr := connsTo(p.pid(), server)
	p.kill()
	if cerr != nil {
		err = errors.Join(err, fmt.Errorf("the connections of %s (pid %d): %w", p.name, p.pid(), cerr))
	}
	if err != nil {
		return err
	}
	return w.waitClosed(ctx, mark, clients)
}

// connWatch follows the connections of an HTTP server, by the address of
// their client end, so that the harness can wait until the connections it
// names were closed. Safe for concurrent use.
type connWatch struct {
	mu      sync.Mutex
	n       uint64            // connections closed so far
	closed  map[string]uint64 // client address → the number of its latest close
	changed chan struct{}     // closed and replaced on every close
}

func newConnWatch() *connWatch {
	return &connWatch{closed: map[string]uint64{}, changed: make(chan struct{})}
}

// hook is the server's http.Server.ConnState.
func (w *connWatch) hook(c net.Conn, s http.ConnState) {
	if s != http.StateClosed && s != http.StateHijacked {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	w.closed[c.RemoteAddr().String()] = w.n
	close(w.changed)
	w.changed = make(chan struct{})
}

// mark returns the closes counted so far: waitClosed with it waits for
// closes that come after.
func (w *connWatch) mark() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// waitClosed waits until the connection of each of clients (client
// addresses, "ip:port") was closed after mark, or ctx ends.
func (w *connWatch) waitClosed(ctx context.Context, mark uint64, clients []string) error {
	for {
		w.mu.Lock()
		var open []string
		for _, c := range clients {
			if w.closed[c] <= mark {
				open = append(open, c)
			}
		}
		ch := w.changed
		w.mu.Unlock()
		if len(open) == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("the receiver still has %d connections of a killed process open (%s): %w", len(open), strings.Join(open, ", "), ctx.Err())
		}
	}
}

// tcpEstablished is the state of an established connection in
// /proc/net/tcp (include/net/tcp_states.h).
const tcpEstablished = 1

// connsTo returns the client addresses of the established TCP connections
// that process pid has open to server (a listener's "ip:port"), read from
// Linux's /proc: the process's file descriptors name their sockets' inodes,
// and /proc/net/tcp{,6} the inodes' addresses. Only an established
// connection can carry a request the server has yet to read: one the
// server closed already is in CLOSE_WAIT on the client's side, one that
// is still connecting has sent nothing.
func connsTo(pid int, server string) ([]string, error) {
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		return nil, err
	}
	ip, wantPort := net.ParseIP(host), uint64(0)
	if wantPort, err = strconv.ParseUint(port, 10, 16); err != nil || ip == nil {
		return nil, fmt.Errorf("server address %q: want ip:port", server)
	}
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		return nil, fmt.Errorf("the harness reads a killed worker's connections from /proc (Linux): %w", err)
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return nil, err
	}
	targets, err := p.FileDescriptorTargets()
	if err != nil {
		return nil, err
	}
	inodes := map[uint64]bool{}
	for _, t := range targets {
		if s, ok := strings.CutPrefix(t, "socket:["); ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				inodes[n] = true
			}
		}
	}
	var out []string
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		lines, err := read()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // /proc/net/tcp6: no IPv6 in this kernel
			}
			return nil, err
		}
		for _, l := range lines {
			if inodes[l.Inode] && l.St == tcpEstablished && l.RemPort == wantPort && l.RemAddr.Equal(ip) {
				out = append(out, net.JoinHostPort(clientIP(l.LocalAddr).String(), strconv.FormatUint(l.LocalPort, 10)))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// clientIP is ip as the server's RemoteAddr spells it: an IPv4 address
// seen through an IPv6 socket in its four bytes.
func clientIP(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return ip
}
