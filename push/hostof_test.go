package push_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
)

// hostCases are URLs written in the ways HostOf must see through.
var hostCases = map[string]string{
	"https://Example.ORG/inbox":     "example.org:443",
	"https://example.org:443/x":     "example.org:443",
	"http://example.org/x":          "example.org:80",
	"http://example.org:8080":       "example.org:8080",
	"HTTPS://UP.example/?a=B":       "up.example:443",
	"https://a.example?x=y/z":       "a.example:443",
	"https://host.example:/x":       "host.example:443",
	"https://[::1]/x":               "[::1]:443",
	"https://[::1]:8443/x":          "[::1]:8443",
	"http://127.0.0.2:9/x?q=1":      "127.0.0.2:9",
	"https://ÉCOLE.example/in":      "École.example:443", // ASCII letters only, as SQL's lower() under "C"
	"https://[2001:DB8::1]:80/path": "[2001:db8::1]:80",
}

func TestHostOf(t *testing.T) {
	for raw, want := range hostCases {
		require.NoError(t, push.ValidateURL(raw), raw)
		require.Equal(t, want, push.HostOf(raw), raw)
		require.Equal(t, want, push.Registration{URL: raw}.Host(), raw)
	}
	for _, bad := range []string{"", "ftp://x.example/", "https:///nohost", "://x"} {
		require.Equal(t, "(invalid url)", push.HostOf(bad), bad)
	}
}
