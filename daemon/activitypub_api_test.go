package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/seedtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// TestAPIRegistersAnActivityPubSchemeAndShowsIt: POST /v1/registrations
// takes an activitypub config's signature_scheme, refuses a bad one naming
// the field, and shows the scheme (pinned, or auto) but never the key.
func TestAPIRegistersAnActivityPubSchemeAndShowsIt(t *testing.T) {
	pemText, err := os.ReadFile(filepath.Join("..", "testdata", "activitypub", "alice-test-key.pem"))
	require.NoError(t, err)
	d, err := New(Options{Store: memory.New(), Transport: noTransport, Projections: []push.Projection{activitypub.New()},
		Now: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	srv := httptest.NewServer(d.APIHandler())
	t.Cleanup(srv.Close)
	body := func(id, scheme string) string {
		cfg := map[string]any{"key_id": "https://example.com/users/alice#main-key", "private_key": string(pemText)}
		if scheme != "" {
			cfg["signature_scheme"] = scheme
		}
		b, _ := json.Marshal(map[string]any{"stream": "actor/alice", "id": id, "namespace": "activitypub", "url": "https://remote.example/" + id, "config": cfg})
		return string(b)
	}
	for id, want := range map[string]string{"pinned": "cavage", "auto": "auto"} {
		code, answer := post(t, srv, "/v1/registrations", body(id, map[string]string{"pinned": "cavage"}[id]))
		require.Equal(t, http.StatusCreated, code, answer)
		require.NotContains(t, answer, "PRIVATE KEY")
		var v operator.RegistrationView
		require.NoError(t, json.Unmarshal([]byte(answer), &v))
		require.Equal(t, want, v.SignatureScheme)
	}
	code, answer := post(t, srv, "/v1/registrations", body("bad", "rsa-sha256"))
	require.Equal(t, http.StatusBadRequest, code, answer)
	require.Contains(t, errorOf(t, answer), "config.signature_scheme")
}

// TestAPIRefusesAnRSAKeyPastMaxKeyBits: a registration's own private_key,
// or a key held once, of more than 8192 bits is refused naming its field,
// nothing stored: each of its signatures would cost a quarter of a second of
// CPU or more, taken from every other registration's deliveries.
func TestAPIRefusesAnRSAKeyPastMaxKeyBits(t *testing.T) {
	big, err := os.ReadFile(filepath.Join("..", "testdata", "activitypub", "rsa-8200-test-key.pem"))
	require.NoError(t, err)
	s := seedtest.SQLite(t)
	srv := activityPubAPIServer(t, s)
	const keyID = "https://example.com/users/alice#main-key"
	b, _ := json.Marshal(map[string]any{"stream": "actor/alice", "id": "big", "namespace": "activitypub", "url": "https://remote.example/inbox",
		"config": map[string]string{"key_id": keyID, "private_key": string(big)}})
	code, body := post(t, srv, "/v1/registrations", string(b))
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, errorOf(t, body), "invalid config.private_key: is an RSA key of 8200 bits: 2048 to 8192 bits")
	_, err = s.Get(t.Context(), "actor/alice", "big")
	require.ErrorIs(t, err, journal.ErrNotFound)

	b, _ = json.Marshal(map[string]string{"key_id": keyID, "private_key": string(big)})
	code, body = post(t, srv, "/v1/keys", string(b))
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, errorOf(t, body), "invalid private_key: is an RSA key of 8200 bits")
	keys, err := s.ActorKeys(t.Context())
	require.NoError(t, err)
	require.Empty(t, keys)
}

// TestAPIRefusesAConfigPastMaxConfigBytes: a registration's config is held
// by every turn of it, so one past store.MaxConfigBytes (here 40,000
// actors) is refused naming config, nothing stored (20 registrations of
// 6.8 MB configs took a daemon from 65 to 200 MB).
func TestAPIRefusesAConfigPastMaxConfigBytes(t *testing.T) {
	pemText, err := os.ReadFile(filepath.Join("..", "testdata", "activitypub", "alice-test-key.pem"))
	require.NoError(t, err)
	s := seedtest.SQLite(t)
	srv := activityPubAPIServer(t, s)
	actors := make([]string, 40000)
	for i := range actors {
		actors[i] = fmt.Sprintf("https://remote.example/users/%06d", i)
	}
	b, _ := json.Marshal(map[string]any{"stream": "actor/alice", "id": "wide", "namespace": "activitypub", "url": "https://remote.example/inbox",
		"config": map[string]any{"key_id": "https://example.com/users/alice#main-key", "private_key": string(pemText), "actors": actors}})
	code, body := post(t, srv, "/v1/registrations", string(b))
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Regexp(t, `^invalid config: is \d+ bytes, more than 1048576$`, errorOf(t, body))
	_, err = s.Get(t.Context(), "actor/alice", "wide")
	require.ErrorIs(t, err, journal.ErrNotFound)
}

// TestAPIRefusesAKeyIDAHeaderCannotCarry: a key_id with a character an RFC
// 8941 string or draft-cavage's quoted keyId cannot carry (non-ASCII, a
// space, '"') was taken, and every signature of every delivery then failed
// ("rfc9421: signature parameters: invalid string format"); it is refused
// naming key_id, as a registration's and as a held key's, nothing stored.
func TestAPIRefusesAKeyIDAHeaderCannotCarry(t *testing.T) {
	pemText, err := os.ReadFile(filepath.Join("..", "testdata", "activitypub", "alice-test-key.pem"))
	require.NoError(t, err)
	s := seedtest.SQLite(t)
	srv := activityPubAPIServer(t, s)
	for _, keyID := range []string{"https://example.com/users/é#main-key", "https://example.com/users/a b#main-key", `https://example.com/users/a"b#main-key`} {
		b, _ := json.Marshal(map[string]any{"stream": "actor/alice", "id": "r", "namespace": "activitypub", "url": "https://remote.example/inbox",
			"config": map[string]string{"key_id": keyID, "private_key": string(pemText)}})
		code, body := post(t, srv, "/v1/registrations", string(b))
		require.Equal(t, http.StatusBadRequest, code, body)
		require.True(t, strings.HasPrefix(errorOf(t, body), "invalid config.key_id: has U+"), body)

		b, _ = json.Marshal(map[string]string{"key_id": keyID, "private_key": string(pemText)})
		code, body = post(t, srv, "/v1/keys", string(b))
		require.Equal(t, http.StatusBadRequest, code, body)
		require.True(t, strings.HasPrefix(errorOf(t, body), "invalid key_id: has U+"), body)
	}
	_, err = s.Get(t.Context(), "actor/alice", "r")
	require.ErrorIs(t, err, journal.ErrNotFound)
	keys, err := s.ActorKeys(t.Context())
	require.NoError(t, err)
	require.Empty(t, keys)
}

// activityPubAPIServer is apiServer for the activitypub namespace.
func activityPubAPIServer(t *testing.T, s store.Backend) *httptest.Server {
	t.Helper()
	d, err := New(Options{Store: s, Transport: noTransport, Projections: []push.Projection{activitypub.New()},
		Now: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	srv := httptest.NewServer(d.APIHandler())
	t.Cleanup(srv.Close)
	return srv
}
