package transport

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// maxHeard bounds what a heardConn keeps of the receiver's first bytes:
// enough for a status line and headers to fail on as net/http fails.
const maxHeard = 4 << 10

// heardConn is a connection that keeps the first bytes the receiver sent,
// so that an answer which is not HTTP is the registration's however
// net/http's reader and writer race. A receiver that writes a banner
// ("SSH-2.0-…") and closes makes net/http fail in one of three ways: its
// reader parses the banner (the answer, as wanted), or it reads the banner
// before the request was counted ("Unsolicited response … on idle HTTP
// channel"), or the request's write fails on the reset first and the
// connection closes before the reader ran. The last two said the host
// failed (1 time in 40 on loopback).
//
// Only a new connection's first exchange is judged so (attempt): once it
// is, or when the connection is TLS (its bytes are ciphertext), forget
// drops what was kept and its reads and close go straight through.
type heardConn struct {
	net.Conn
	done   atomic.Bool  // forgotten: keep nothing more
	reads  sync.RWMutex // a Read holds it shared; Close takes it to wait for one under way
	mu     sync.Mutex
	head   []byte // the first maxHeard bytes Read returned
	peeked []byte // what the receiver sent that no Read took, seen at Close
}

// heardDial wraps dial's connections in heardConn.
func heardDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &heardConn{Conn: c}, nil
	}
}

func (c *heardConn) Read(p []byte) (int, error) {
	if c.done.Load() {
		return c.Conn.Read(p)
	}
	c.reads.RLock()
	defer c.reads.RUnlock()
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if len(c.head) < maxHeard {
			c.head = append(c.head, p[:min(n, maxHeard-len(c.head))]...)
		}
		c.mu.Unlock()
	}
	return n, err
}

// Close first keeps the bytes waiting unread, when no Read returned any:
// the kernel holds what the receiver sent before its reset until then.
// It returns once a Read under way has returned and kept what it read.
func (c *heardConn) Close() error {
	if c.done.Load() {
		return c.Conn.Close()
	}
	if len(c.heard()) == 0 {
		if b := peekUnread(c.Conn, maxHeard); len(b) > 0 {
			c.mu.Lock()
			c.peeked = b
			c.mu.Unlock()
		}
	}
	err := c.Conn.Close() // wakes a Read under way
	c.reads.Lock()        // which has then returned, keeping what it read
	defer c.reads.Unlock()
	return err
}

// forget ends the keeping: nothing kept, nothing more kept (a Read under
// way may still keep its bytes, at most maxHeard), no peek at Close.
func (c *heardConn) forget() {
	c.done.Store(true)
	c.mu.Lock()
	c.head, c.peeked = nil, nil
	c.mu.Unlock()
}

// heard returns the first bytes the receiver sent: those a Read returned,
// else those Close saw waiting.
func (c *heardConn) heard() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.head) > 0 {
		return c.head
	}
	return c.peeked
}

// heardFailure returns the error by which a request that failed with err
// on c, a new connection, failed to get an answer, and whether c's receiver
// answered at all (sent a byte): then the failure is the answer's, and err
// is what net/http's reader says of those bytes (the same words whichever
// way the race went), or err itself when they are a whole answer's head
// or more than heardConn keeps.
func heardFailure(c *heardConn, err error) (error, bool) {
	if c == nil {
		return err, false
	}
	heard := c.heard()
	switch len(heard) {
	case 0:
		return err, false
	case maxHeard: // cut: its end may look malformed or short; net/http read on
		return err, true
	}
	resp, perr := http.ReadResponse(bufio.NewReader(bytes.NewReader(heard)), nil)
	if perr != nil {
		return perr, true
	}
	resp.Body.Close()
	return err, true
}
