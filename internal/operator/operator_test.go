package operator

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://remote.example/users/alice/inbox":                             "https://remote.example/users/alice/inbox",
		"https://billing.example/hooks?token=s3cr3t":                           "https://billing.example/hooks?…",
		"https://discord.example/api/webhooks/123456789012345678/AbCdEfGhIjKl": "https://discord.example/api/webhooks/…/AbCdEfGhIjKl",
		"https://hooks.example/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX":    "https://hooks.example/services/T000/B000/…",
		"https://a.example/?": "https://a.example/",
	} {
		require.Equal(t, want, RedactURL(raw), raw)
	}
}

// A host as herald hosts lists it, or any URL on it, names the host that
// store.HostOf counted, non-ASCII capitals included; a URL that does not
// parse is refused naming the field.
func TestHostArgNamesTheHostHeraldCounts(t *testing.T) {
	for _, u := range []string{"https://BÜCHER.example/inbox", "http://Example.ORG:8080/x", "https://[2001:DB8::1]/in"} {
		listed := store.HostOf(u)
		for _, arg := range []string{listed, u, strings.ToUpper(listed[:1]) + listed[1:]} {
			got, err := HostArg(arg)
			require.NoError(t, err, arg)
			require.Equal(t, listed, got, "HostArg(%q)", arg)
		}
	}
	_, err := HostArg("http://exa mple")
	require.ErrorIs(t, err, journal.ErrInvalid)
	require.ErrorContains(t, err, "invalid host")
}
