// Package rawtest serves loopback connections byte by byte, for tests of
// receivers that do not speak HTTP as net/http would (a banner, a broken
// answer, a close without a word). Only tests import it.
package rawtest

import (
	"crypto/tls"
	"net"
	"testing"
)

// Serve listens on 127.0.0.1 (over TLS when config is not nil) until the
// test ends, and runs serve on each connection it accepts, in a goroutine
// of its own, closing the connection after. It returns the listener's
// address, host:port.
func Serve(t testing.TB, config *tls.Config, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if config != nil {
		ln = tls.NewListener(ln, config)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				serve(conn)
			}()
		}
	}()
	return ln.Addr().String()
}
