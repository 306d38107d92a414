package transport

import (
	"errors"
	"testing"
)

// The dialer's Control hook is the real guard: it judges the address the
// socket is about to connect to, and refuses what it cannot parse or any
// network but TCP.
func TestDialControl(t *testing.T) {
	g := &guard{}
	open := &guard{allowPrivate: true}
	for _, c := range []struct {
		network, address string
		refused, openOK  bool
	}{
		{"tcp4", "93.184.215.14:443", false, true},
		{"tcp6", "[2606:4700::1111]:443", false, true},
		{"tcp4", "127.0.0.1:443", true, true},
		{"tcp6", "[::1]:443", true, true},
		{"tcp6", "[::ffff:127.0.0.1]:443", true, true},
		{"tcp4", "169.254.169.254:80", true, false},
		{"tcp6", "[fe80::1%eth0]:80", true, false},
		{"tcp4", "0.0.0.0:80", true, false},
		{"udp4", "93.184.215.14:53", true, false},
		{"tcp4", "not-an-address", true, false},
		{"tcp4", "example.com:443", true, false},
	} {
		err := g.control(c.network, c.address, nil)
		if (err != nil) != c.refused || (err != nil && !errors.Is(err, ErrRefused)) {
			t.Errorf("control(%s, %s) = %v, want refused=%t", c.network, c.address, err, c.refused)
		}
		if err := open.control(c.network, c.address, nil); (err == nil) != c.openOK {
			t.Errorf("with AllowPrivateNetwork: control(%s, %s) = %v, want allowed=%t", c.network, c.address, err, c.openOK)
		}
	}
}
