package transport

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// dialVia returns a DialContext that reaches addr through the HTTP CONNECT
// proxy p (package doc, "Egress proxy"); TLS and Host still name the URL's
// host, as http.Transport sets them from the request. guarded applies the
// address rules to the proxy's own addresses too (a registration's proxy;
// the daemon's is the operator's choice).
func (g *guard) dialVia(p *proxy, guarded bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{KeepAlive: 30 * time.Second}
	if guarded {
		d.Control = g.control
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return g.dial(ctx, network, addr, func(ctx context.Context, _ string, ap netip.AddrPort) (net.Conn, error) {
			if err := CheckAddress(ap.Addr(), g.allowPrivate); err != nil {
				return nil, err
			}
			c, err := d.DialContext(ctx, "tcp", p.addr)
			if err != nil {
				return nil, fmt.Errorf("%v: %w", p, err)
			}
			if err := p.connect(ctx, c, ap); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		})
	}
}

// maxConnectAnswer bounds the proxy's answer to CONNECT, headers included.
const maxConnectAnswer = 16 << 10

// connect asks the proxy on c for a tunnel to target and reads its answer,
// within ctx.
func (p *proxy) connect(ctx context.Context, c net.Conn, target netip.AddrPort) error {
	if deadline, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(deadline)
		defer c.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := &http.Request{Method: http.MethodConnect, URL: nil, Host: target.String(), Header: http.Header{}}
	msg := "CONNECT " + target.String() + " HTTP/1.1\r\nHost: " + target.String() + "\r\n"
	if p.auth != "" {
		msg += "Proxy-Authorization: " + p.auth + "\r\n"
	}
	if _, err := c.Write([]byte(msg + "\r\n")); err != nil {
		return fmt.Errorf("%v: CONNECT %s: %w", p, target, err)
	}
	// A reader of one byte at a time past the answer would be slow; the
	// proxy sends nothing after its answer before the client speaks (TLS's
	// ClientHello, or the request), so a buffered reader loses nothing.
	br := bufio.NewReaderSize(&limited{c, maxConnectAnswer}, 1024)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return &redactedError{fmt.Sprintf("%v: CONNECT %s: reading the answer: %s", p, target, p.redact.String(err.Error())), err}
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%v: CONNECT %s answered %q", p, target, p.redact.String(resp.Status))
	}
	if br.Buffered() > 0 {
		return fmt.Errorf("%v: CONNECT %s: the proxy sent data before the tunnel was used", p, target)
	}
	return nil
}

// redactedError words err without the proxy's credentials (ReadResponse
// quotes a malformed answer) and keeps its chain, which classify reads.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

type limited struct {
	c net.Conn
	n int
}

func (l *limited) Read(b []byte) (int, error) {
	if l.n <= 0 {
		return 0, fmt.Errorf("the proxy's answer is longer than %d bytes", maxConnectAnswer)
	}
	n, err := l.c.Read(b[:min(len(b), l.n)])
	l.n -= n
	return n, err
}
