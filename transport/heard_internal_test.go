package transport

import (
	"io"
	"net"
	"testing"
)

// A new connection keeps the receiver's first bytes until its first
// exchange is judged; once forgotten (an answer came, or the connection is
// TLS) it keeps nothing more and its bytes still pass, so that a
// connection kept alive for hours holds no copy of its first answer.
func TestAForgottenConnectionKeepsNothing(t *testing.T) {
	client, server := net.Pipe()
	c := &heardConn{Conn: client}
	t.Cleanup(func() { c.Close(); server.Close() })
	go func() {
		_, _ = server.Write([]byte("HTTP/1.1 200 OK\r\n"))
		_, _ = server.Write([]byte("more"))
	}()
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil || string(c.heard()) != string(buf[:n]) || n == 0 {
		t.Fatalf("first Read = %q, %v; heard %q, want what it read", buf[:n], err, c.heard())
	}
	c.forget()
	if len(c.heard()) != 0 {
		t.Fatalf("heard after forget = %q, want nothing", c.heard())
	}
	if _, err := io.ReadFull(c, buf[:4]); err != nil || string(buf[:4]) != "more" {
		t.Fatalf("Read after forget = %q, %v; want the bytes passed on", buf[:4], err)
	}
	if len(c.heard()) != 0 {
		t.Fatalf("heard after a forgotten Read = %q, want nothing", c.heard())
	}
}
