package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// hostsPerOctet is how many hosts one third octet holds (127.B.X.1 to
// 127.B.X.250), so that no host ends in .0 or .255.
const hostsPerOctet = 250

// hostIP is the i-th loopback host of block b: 127.b.(i/250).(i%250+1).
// Linux routes all of 127.0.0.0/8 to lo, so each is a host of its own to
// herald (a host is host:port) with no setup.
func hostIP(b, i int) string {
	return fmt.Sprintf("127.%d.%d.%d", b, i/hostsPerOctet, i%hostsPerOctet+1)
}

// hostFarm is n loopback hosts of one block, all on one port, served by
// one handler in the benchmark process. One port for all keeps ephemeral
// ports free for herald's connections.
type hostFarm struct {
	srv   *http.Server
	port  int
	block int
	n     int
	stop  chan struct{} // closed by close: handlers that hold a request return
	once  sync.Once
}

// startFarm listens on n hosts of block b (127.b.x.y) on one port, the
// same for all, and serves h. It tries a few ports: another engineer's
// process may hold the port on one of the addresses.
func startFarm(b, n int, h http.Handler) (*hostFarm, error) {
	if n < 1 || n > 256*hostsPerOctet {
		return nil, fmt.Errorf("hosts: %d is not 1 to %d", n, 256*hostsPerOctet)
	}
	var lastErr error
	for range 5 {
		lns, port, err := listenAll(b, n)
		if err != nil {
			lastErr = err
			continue
		}
		f := &hostFarm{port: port, block: b, n: n, stop: make(chan struct{})}
		f.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		for _, ln := range lns {
			go func() {
				if err := f.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					logf("hosts %s: %v", ln.Addr(), err)
				}
			}()
		}
		return f, nil
	}
	return nil, fmt.Errorf("listen on %d hosts of 127.%d.0.0/16 on one port: %w", n, b, lastErr)
}

// listenAll listens on host 0 on a port the kernel picks, then on every
// other host on that port.
func listenAll(b, n int) ([]net.Listener, int, error) {
	first, err := net.Listen("tcp", hostIP(b, 0)+":0")
	if err != nil {
		return nil, 0, err
	}
	port := first.Addr().(*net.TCPAddr).Port
	lns := []net.Listener{first}
	for i := 1; i < n; i++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(hostIP(b, i), strconv.Itoa(port)))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, 0, err
		}
		lns = append(lns, ln)
	}
	return lns, port, nil
}

// url is the base URL of host i (http://127.b.x.y:port).
func (f *hostFarm) url(i int) string {
	return "http://" + net.JoinHostPort(hostIP(f.block, i), strconv.Itoa(f.port))
}

// close ends held requests and closes every listener and connection.
func (f *hostFarm) close() {
	f.once.Do(func() {
		close(f.stop)
		_ = f.srv.Close()
	})
}

// hold waits d (forever when d < 0) or until the request's client gives up
// or the farm closes; it reports whether the whole wait passed. A handler
// that returns without writing answers 200: one that must not answer
// panics with http.ErrAbortHandler.
func (f *hostFarm) hold(r *http.Request, d time.Duration) bool {
	var after <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-after:
		return true
	case <-r.Context().Done():
	case <-f.stop:
	}
	return false
}

// raiseFileLimit sets the soft limit of open files to the hard one, for
// this process and the daemons it starts (an explicit Setrlimit is what
// children inherit; Go's own raise at start-up is undone for them): a
// farm of 10,000 hosts holds 10,000 listeners.
func raiseFileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	l.Cur = l.Max
	return l.Cur, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
}
