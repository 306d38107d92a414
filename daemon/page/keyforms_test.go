package page_test

import (
	"encoding/pem"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// newPEM is a fresh Ed25519 private key as PKCS #8 PEM.
func newPEM(t *testing.T) string {
	t.Helper()
	_, p := keytest.Ed25519(t)
	return string(p)
}

// pemBody is the base64 body of a PEM (its second line on), which no
// answer may hold.
func pemBody(p string) string {
	b, _ := pem.Decode([]byte(p))
	return string(pem.EncodeToMemory(b))[len("-----BEGIN PRIVATE KEY-----\n"):][:40]
}

// heldPEM is key id's private key as the store holds it.
func heldPEM(t *testing.T, s store.ActorKeyStore, id string) string {
	t.Helper()
	k, err := s.ActorKey(t.Context(), id)
	require.NoError(t, err)
	return string(k.PrivateKey)
}

// TestAdminAddsRotatesAndRemovesKeysOnThePage: an admin adds a key with a
// hostile id, rotates it and removes it through the keys view's forms,
// and the store holds each change; removal is refused while a
// registration signs with the key, unless forced; a bad PEM is refused
// naming private_key and stores nothing; no answer holds a private key or
// is cached.
func TestAdminAddsRotatesAndRemovesKeysOnThePage(t *testing.T) {
	s := seeded(t)
	srv, c, csrf := loggedIn(t, s)
	const id = "https://a.example/u/<b>alice</b>#main-key"
	first, second := newPEM(t), newPEM(t)
	noPEM := func(body string) {
		t.Helper()
		require.NotContains(t, body, pemBody(first))
		require.NotContains(t, body, pemBody(second))
	}
	held := func() []store.ActorKey {
		t.Helper()
		ks, err := s.ActorKeys(t.Context())
		require.NoError(t, err)
		return ks
	}
	// accepted posts pemText to path, which sends to done, and requires
	// the one key held to be it, at version.
	accepted := func(path, done, pemText string, version int) store.ActorKey {
		t.Helper()
		resp, body := post(t, c, srv.URL+path, url.Values{"csrf": {csrf}, "key_id": {id}, "private_key": {pemText}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
		require.Equal(t, "/ui/keys?done="+done, resp.Header.Get("Location"))
		ks := held()
		require.Len(t, ks, 1)
		require.Equal(t, id, ks[0].ID)
		require.EqualValues(t, version, ks[0].Version)
		require.Equal(t, pemText, heldPEM(t, s, id))
		return ks[0]
	}

	_, body := get(t, c, srv.URL+"/ui/keys")
	require.Contains(t, body, `id="add-key"`, "an admin sees the forms")

	resp, body := post(t, c, srv.URL+"/ui/keys", url.Values{"csrf": {csrf}, "key_id": {id}, "private_key": {"-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, `id="key-error"`)
	require.Contains(t, body, "private_key")
	require.Contains(t, body, `value="https://a.example/u/&lt;b&gt;alice&lt;/b&gt;#main-key"`, "the key id typed is kept, escaped")
	require.NotContains(t, body, "bm90IGEga2V5", "not even a bad PEM is written back")
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Empty(t, held(), "a bad PEM stores nothing")

	added := accepted("/ui/keys", "add-key", first, 1)

	resp, body = get(t, c, srv.URL+"/ui/keys?done=add-key")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "<bdi>https://a.example/u/&lt;b&gt;alice&lt;/b&gt;#main-key</bdi>")
	require.Contains(t, body, `id="done"`)
	// As html/template writes it: a base64 fingerprint may hold '+' (&#43;).
	require.Contains(t, body, strings.ReplaceAll(added.Fingerprint, "+", "&#43;"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	noPEM(body)

	accepted("/ui/key/rotate", "rotate-key", second, 2)

	resp, body = post(t, c, srv.URL+"/ui/key/rotate", url.Values{"csrf": {csrf}, "key_id": {id}, "private_key": {"junk " + first}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "private_key")
	noPEM(body)
	require.Equal(t, second, heldPEM(t, s, id), "a bad rotation changes nothing")

	_, err := s.Register(t.Context(), push.Registration{Stream: "actor/alice", ID: "bob", Namespace: "activitypub", URL: "https://b.example/inbox",
		Config: push.Config(`{"key_id":"` + "https://a.example/u/\\u003cb\\u003ealice\\u003c/b\\u003e#main-key" + `"}`)})
	require.NoError(t, err)
	resp, body = post(t, c, srv.URL+"/ui/key/remove", url.Values{"csrf": {csrf}, "key_id": {id}})
	require.Equal(t, http.StatusConflict, resp.StatusCode, body)
	require.Contains(t, body, "1 registration, so it was not removed: re-register it with another key first, or remove it anyway with &#34;even while registrations sign with it&#34; checked")
	noPEM(body)
	require.Len(t, held(), 1, "refused while a registration signs with it")

	resp, body = post(t, c, srv.URL+"/ui/key/remove", url.Values{"csrf": {csrf}, "key_id": {id}, "force": {"true"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Equal(t, "/ui/keys?done=remove-key", resp.Header.Get("Location"))
	require.Empty(t, held())

	resp, body = post(t, c, srv.URL+"/ui/keys", url.Values{"key_id": {id}, "private_key": {first}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "without the CSRF token: %s", body)
	resp, body = post(t, c, srv.URL+"/ui/keys", url.Values{"csrf": {csrf}, "key_id": {id}, "private_key": {first}}, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "from another site: %s", body)
	require.Empty(t, held())
}

// TestOnlyAnAdminChangesKeysOnThePage: an operator sees the keys without
// their forms and its POSTs are refused; a reader is refused the view and
// the POSTs; the store keeps its key.
func TestOnlyAnAdminChangesKeysOnThePage(t *testing.T) {
	s := seeded(t)
	const id = "https://a.example/u/alice#main-key"
	held := newPEM(t)
	require.NoError(t, s.AddActorKey(t.Context(), store.ActorKey{ID: id, PrivateKey: []byte(held), Algorithm: "Ed25519",
		Fingerprint: "SHA256:fingerprintOfAlice", Created: seedT0, Version: 1}))
	_, srv := serve(t, s, testToken, seedView)

	for _, role := range []store.Role{store.RoleOperator, store.RoleReader} {
		secret, _ := tenantToken(t, s, role)
		c := client(t)
		csrf, _ := loginAs(t, c, srv, secret)
		resp, body := get(t, c, srv.URL+"/ui/keys")
		if role == store.RoleOperator {
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			require.Contains(t, body, "SHA256:fingerprintOfAlice")
			require.NotContains(t, body, `action="/ui/keys"`, "no form for an operator")
			require.NotContains(t, body, `action="/ui/key/`)
			csrf = csrfOf(t, body)
		} else {
			require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
		}
		for path, form := range map[string]url.Values{
			"/ui/keys":       {"csrf": {csrf}, "key_id": {"https://a.example/u/mallory#key"}, "private_key": {newPEM(t)}},
			"/ui/key/rotate": {"csrf": {csrf}, "key_id": {id}, "private_key": {newPEM(t)}},
			"/ui/key/remove": {"csrf": {csrf}, "key_id": {id}, "force": {"true"}},
		} {
			resp, body := post(t, c, srv.URL+path, form)
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s by a %s: %s", path, role, body)
		}
	}
	ks, err := s.ActorKeys(t.Context())
	require.NoError(t, err)
	require.Len(t, ks, 1)
	require.EqualValues(t, 1, ks[0].Version)
	require.Equal(t, held, heldPEM(t, s, id))
}
