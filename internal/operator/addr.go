package operator

import (
	"fmt"
	"net"
	"strings"
)

// LoopbackHost reports whether a request's Host, port or not, names a
// loopback address (127.0.0.0/8, ::1 with any zone, localhost) or is empty
// (HTTP/1.0): all an API or page open without a token answers, against DNS
// rebinding.
func LoopbackHost(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	host, _, _ = strings.Cut(host, "%")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckAddr refuses to serve an API on addr (host:port; empty: off)
// without a token unless it is a loopback address (LoopbackHost; an empty
// host is every interface). Its error names field, the option, and envVar,
// the variable that sets the token.
func CheckAddr(field, addr, token, envVar string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %v", field, addr, err)
	}
	if token != "" || host != "" && LoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("%s %s is not a loopback address: set %s to serve it there (refusing to start it unauthenticated)", field, addr, envVar)
}
