package daemon

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/heraldpush/herald/daemon/internal/throttle"
)

// Limits bound what clients can hold of the daemon's HTTP servers (metrics,
// admin and API addresses): time a request may take to arrive, to be
// answered and to sit idle, and connections. A zero field takes
// DefaultLimits' value.
type Limits struct {
	// ReadHeader is how long a client may take to send a request's
	// headers; Read, the whole request, its body included (the body
	// deadline); Write, from the end of the headers to the end of the
	// answer; Idle, a kept-alive connection waiting for its next request.
	ReadHeader, Read, Write, Idle time.Duration
	// MaxConns is the connections the three servers hold at once, together;
	// more wait in the kernel's queue until one closes. MaxConnsPerClient
	// is what one client address (an IPv6 /64) may hold of them; more from
	// it are closed when accepted.
	MaxConns, MaxConnsPerClient int
}

// DefaultLimits are the limits of herald run.
//
//   - ReadHeader 5 s and Read 30 s: a request of MaxBody (8 MiB) needs
//     280 KB/s; a POST whose body never comes holds its connection 30 s.
//   - Write 60 s: the slowest answer, a bulk unpark over a large store,
//     is a few seconds; a client that stops reading is cut off.
//   - Idle 30 s: reconnecting costs a client one round trip; an idle
//     socket costs the daemon a file descriptor and ~8 KB of buffers.
//   - MaxConns 512: the operators, scrapers and producers of one daemon
//     need tens; 512 goroutines with their buffers are ~20 MB, and the
//     limit is lowered to a quarter of the process's file descriptors
//     (RLIMIT_NOFILE) when that is smaller, so that sockets to receivers
//     and the store are never starved by clients (under ulimit -n 128 a
//     valid request used to fail with "too many open files").
//   - MaxConnsPerClient 64, or a quarter of MaxConns when that is smaller:
//     one address cannot take every connection (a proxy in front counts
//     as one client: give it a pool below this).
var DefaultLimits = Limits{ReadHeader: 5 * time.Second, Read: 30 * time.Second, Write: 60 * time.Second,
	Idle: 30 * time.Second, MaxConns: 512, MaxConnsPerClient: 64}

// check refuses a negative limit, naming it.
func (l Limits) check() error {
	for _, f := range []struct {
		name string
		bad  bool
	}{{"ReadHeader", l.ReadHeader < 0}, {"Read", l.Read < 0}, {"Write", l.Write < 0}, {"Idle", l.Idle < 0},
		{"MaxConns", l.MaxConns < 0}, {"MaxConnsPerClient", l.MaxConnsPerClient < 0}} {
		if f.bad {
			return fmt.Errorf("Options.Limits.%s must not be negative (0: DefaultLimits')", f.name)
		}
	}
	return nil
}

// withDefaults fills l's zero fields from DefaultLimits, bounding the
// default connection counts by the file descriptors the process may open.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if n := openFilesLimit(); n > 0 && n/4 < d.MaxConns {
		d.MaxConns = max(4, n/4)
	}
	if l.MaxConns > 0 {
		d.MaxConns = l.MaxConns
	}
	d.MaxConnsPerClient = min(d.MaxConnsPerClient, max(1, d.MaxConns/4))
	for _, f := range []struct{ v, def *time.Duration }{{&l.ReadHeader, &d.ReadHeader}, {&l.Read, &d.Read}, {&l.Write, &d.Write}, {&l.Idle, &d.Idle}} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	l.MaxConns = d.MaxConns
	if l.MaxConnsPerClient == 0 {
		l.MaxConnsPerClient = d.MaxConnsPerClient
	}
	return l
}

// server is an http.Server of h under l's timeouts, logging what it logs
// (a failed TLS handshake, an accept error) to log as warnings.
func (l Limits) server(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeader, ReadTimeout: l.Read, WriteTimeout: l.Write, IdleTimeout: l.Idle,
		MaxHeaderBytes: 64 << 10, // a bearer token and cookies fit many times over; the default, 1 MiB, is for no one here
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// connLimiter counts the connections of every listener it wraps, in all
// and per client.
type connLimiter struct {
	slots     chan struct{} // one a connection open
	perClient int
	mu        sync.Mutex
	byClient  map[netip.Prefix]int
}

func newConnLimiter(l Limits) *connLimiter {
	return &connLimiter{slots: make(chan struct{}, l.MaxConns), perClient: l.MaxConnsPerClient, byClient: map[netip.Prefix]int{}}
}

func (c *connLimiter) wrap(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, c: c, done: make(chan struct{})}
}

func (c *connLimiter) take(client netip.Prefix) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byClient[client] >= c.perClient {
		return false
	}
	c.byClient[client]++
	return true
}

func (c *connLimiter) release(client netip.Prefix) {
	c.mu.Lock()
	if c.byClient[client]--; c.byClient[client] <= 0 {
		delete(c.byClient, client)
	}
	c.mu.Unlock()
	<-c.slots
}

type limitedListener struct {
	net.Listener
	c         *connLimiter
	done      chan struct{}
	closeOnce sync.Once
}

// Accept waits for a free slot, then accepts; a connection from a client
// at its limit is closed at once and the next one accepted.
func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		select {
		case l.c.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
		conn, err := l.Listener.Accept()
		if err != nil {
			<-l.c.slots
			return nil, err
		}
		client := throttle.OfAddr(conn.RemoteAddr())
		if !l.c.take(client) {
			_ = conn.Close()
			<-l.c.slots
			continue
		}
		return &limitedConn{Conn: conn, release: sync.OnceFunc(func() { l.c.release(client) })}, nil
	}
}

func (l *limitedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
