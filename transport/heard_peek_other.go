//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package transport

import "net"

// peekUnread is a no-op here: only what net/http read is heard.
func peekUnread(net.Conn, int) []byte { return nil }
