package daemon

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/sqlite"
)

// TestRemovingAKeyInUseOverTheAPISaysForceTrue: DELETE /v1/key of a key a
// registration signs with is a 409 whose error says, as a sentence, how to
// remove it anyway over the API (force=true), and keeps the key; then
// force=true removes it.
func TestRemovingAKeyInUseOverTheAPISaysForceTrue(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "herald.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, api := tenantServers(t, s)
	const keyID = "https://a.example/u/alice#main-key"
	_, rsaPEM := keytest.RSA(t)
	code, body := call(t, api, http.MethodPost, "/v1/keys", "application/json", testToken, fmt.Sprintf(`{"key_id": %q, "private_key": %q}`, keyID, rsaPEM))
	require.Equal(t, http.StatusCreated, code, body)
	_, err = s.Register(t.Context(), push.Registration{Stream: "actor/alice", ID: "bob", Namespace: "activitypub", URL: "https://b.example/inbox",
		Config: push.Config(`{"key_id":"` + keyID + `"}`)})
	require.NoError(t, err)

	path := "/v1/key?key_id=" + url.QueryEscape(keyID)
	code, body = call(t, api, http.MethodDelete, path, "", testToken, "")
	require.Equal(t, http.StatusConflict, code, body)
	msg := errorOf(t, body)
	require.Contains(t, msg, "signs the deliveries of 1 registration, so it was not removed: re-register it with another key first, or remove it anyway with force=true")
	require.False(t, strings.HasSuffix(msg, "conflict"), msg)
	code, body = call(t, api, http.MethodDelete, path+"&force=true", "", testToken, "")
	require.Equal(t, http.StatusOK, code, body)
}
