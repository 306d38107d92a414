package push

import (
	"net"
	"net/url"
	"strings"
)

// HostOf is a stand-in for the foundation's push.HostOf (main, "push: store
// each registration's host"), removed when that lands.
func HostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
