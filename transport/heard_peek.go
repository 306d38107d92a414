//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package transport

import (
	"net"
	"syscall"
)

// peekUnread returns up to limit bytes waiting unread on c's socket, without
// taking them or waiting for any.
func peekUnread(c net.Conn, limit int) []byte {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	buf, n := make([]byte, limit), 0
	_ = rc.Control(func(fd uintptr) {
		if m, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT); err == nil {
			n = m
		}
	})
	return buf[:n]
}
