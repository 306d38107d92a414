package page_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
)

// TestKeysPageListsHeldKeysWithoutTheirPrivateKey: the keys view shows a
// held key's id, algorithm and fingerprint, never its private key, escaped
// as hostile text; a reader is refused it.
func TestKeysPageListsHeldKeysWithoutTheirPrivateKey(t *testing.T) {
	s := seeded(t)
	const id = "https://a.example/u/<b>alice</b>#main-key"
	const private = "-----BEGIN PRIVATE KEY-----\nPrivateKeyOfAliceNeverShown\n-----END PRIVATE KEY-----\n"
	require.NoError(t, s.AddActorKey(t.Context(), store.ActorKey{ID: id, PrivateKey: []byte(private), Algorithm: "Ed25519",
		Fingerprint: "SHA256:fingerprintOfAlice", Created: seedT0}))
	srv, c, _ := loggedIn(t, s)

	resp, body := get(t, c, srv.URL+"/ui/keys")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "https://a.example/u/&lt;b&gt;alice&lt;/b&gt;#main-key")
	require.Contains(t, body, "SHA256:fingerprintOfAlice")
	require.Contains(t, body, "Ed25519")
	require.NotContains(t, body, "PrivateKeyOfAlice")
	require.NotContains(t, body, "BEGIN PRIVATE KEY")

	reader, _ := tenantToken(t, s, store.RoleReader)
	rc := client(t)
	loginAs(t, rc, srv, reader)
	resp, _ = get(t, rc, srv.URL+"/ui/keys")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a reader may not see the keys")
}
