package operator

import (
	"errors"
	"fmt"
	"net/http"
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

// LoopbackHost takes every way a client names a loopback address, and no
// other name.
func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:9465": true, "127.1.2.3:80": true, "localhost": true, "LOCALHOST:9465": true,
		"[::1]:9465": true, "::1": true, "[::1%lo]:9465": true, "[::ffff:127.0.0.1]:1": true, "": true,
		"evil.example": false, "evil.example:9465": false, "127.0.0.1.nip.io": false, "0.0.0.0:9465": false,
		"10.0.0.5:9465": false, "foo.localhost": false, "[::2]:9465": false,
	} {
		require.Equal(t, want, LoopbackHost(host), host)
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

// HTTPStatus maps the journal's sentinels, wrapped or not, and an
// HTTPError's own code to the statuses the APIs and the page answer.
func TestHTTPStatusOfErrors(t *testing.T) {
	for err, want := range map[error]int{
		journal.Invalid("stream", "is empty"):                       http.StatusBadRequest,
		fmt.Errorf("get: %w", journal.ErrNotFound):                  http.StatusNotFound,
		&journal.ConflictError{ID: "a", Field: "kind"}:              http.StatusConflict,
		&journal.SealedError{Stream: "s", FinalSeq: 2}:              http.StatusConflict,
		HTTPError{Code: http.StatusRequestEntityTooLarge, Msg: "x"}: http.StatusRequestEntityTooLarge,
		errors.New("the database is away"):                          http.StatusInternalServerError,
	} {
		require.Equal(t, want, HTTPStatus(err), err.Error())
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
