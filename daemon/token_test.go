package daemon

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

// A weak static token is refused at start, with the field, the reason and
// how to make one, never the token itself; random tokens of 128 bits pass.
func TestWeakTokenRefusedAtStart(t *testing.T) {
	for _, c := range []struct{ token, says string }{
		{"q7", "2 characters hold at most 12 bits"},
		{"s3cret-s3cret-s3cret", "20 characters hold at most 120 bits"},
		{"0123456789abcdef0123456789abcde", "31 characters hold at most 124 bits"}, // hex: 4 bits each
		{strings.Repeat("a", 64), "only 1 distinct characters"},
		{strings.Repeat("ab", 32), "only 2 distinct characters"},
		{" 0f9c2a7e41b85d36c0e1f4a29b7d58e3", "starts or ends with a space"},
		{"0f9c2a7e41b85d36\u00e9c0e1f4a29b7d58e3", "cannot carry"},
		{"0f9c2a7e41b85d36\tc0e1f4a29b7d58e3", "cannot carry"},
	} {
		err := CheckToken("HERALD_ADMIN_TOKEN", c.token)
		require.Error(t, err, "%q", c.token)
		require.ErrorContains(t, err, "HERALD_ADMIN_TOKEN", c.token)
		require.ErrorContains(t, err, c.says, c.token)
		require.ErrorContains(t, err, "openssl rand -hex 32")
		require.NotContains(t, err.Error(), strings.TrimSpace(c.token))

		_, err = New(Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{webhook.New()}, APIToken: c.token})
		require.ErrorContains(t, err, "Options.APIToken", c.token)
	}
	for _, ok := range []string{"", testToken, "0f9c2a7e41b85d36c0e1f4a29b7d58e3a4c6", "Jq3pX9vTz_K2mW8rNc4hYb", "tok-Qm3Wn8Er5Ty1Ui6Op4Za"} {
		require.NoError(t, CheckToken("HERALD_ADMIN_TOKEN", ok), "%q", ok)
	}
}

// An address off loopback needs a token; what CheckAddr lets start open,
// LoopbackHost answers.
func TestAddressNeedsATokenOffLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:9465": true, "[::1]:9465": true, "localhost:9465": true, "LOCALHOST:9465": true, "[::1%lo]:9465": true, "127.0.0.2:9465": true,
		"0.0.0.0:9465": false, "10.0.0.5:9465": false, ":9465": false, "[::]:9465": false, "localhost.example:9465": false} {
		err := CheckAddr("--admin-addr", addr, "", "HERALD_ADMIN_TOKEN")
		if ok {
			require.NoError(t, err, addr)
		} else {
			require.Error(t, err, addr)
			require.Contains(t, err.Error(), "--admin-addr", addr)
			require.Contains(t, err.Error(), "HERALD_ADMIN_TOKEN", addr)
		}
		require.NoError(t, CheckAddr("--admin-addr", addr, "t0ken", "HERALD_ADMIN_TOKEN"), "%s with a token", addr)
	}
}
