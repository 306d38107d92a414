package storetest

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store"
)

// Secrets are one secret of each projection herald ships, in a
// registration's config as that projection reads it (projection/… package
// docs); a dump of a store that seals must show none of them.
var Secrets = []struct {
	Namespace, Config string
	Secrets           []string
}{
	{"webhook", `{"secrets":["whsec_c2VhbGVkLXdlYmhvb2stc2VjcmV0LTEyMzQ1Ng=="]}`, []string{"whsec_c2VhbGVkLXdlYmhvb2stc2VjcmV0LTEyMzQ1Ng=="}},
	{"cloudevents", `{"source":"https://shop.example","token":"ce-token-4f1d2a9b7c"}`, []string{"ce-token-4f1d2a9b7c"}},
	{"a2a", `{"token":"a2a-token-88e3c1","auth_scheme":"Bearer","credentials":"a2a-cred-0b7d55e2"}`, []string{"a2a-token-88e3c1", "a2a-cred-0b7d55e2"}},
	{"activitypub", `{"key_id":"https://a.example/u/alice#main-key","private_key":"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIPrivateKeyOfAliceXyz1234567890abcdefgh\n-----END PRIVATE KEY-----\n"}`,
		[]string{"PrivateKeyOfAliceXyz", "BEGIN PRIVATE KEY"}},
}

// ActorKeySecret is an actor's private key held once (store.ActorKeyStore);
// a dump of a store that seals must not show it either.
var ActorKeySecret = struct {
	ID, PEM string
	Secrets []string
}{"https://a.example/u/bob#main-key", "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIActorKeyOfBobQwerty0987654321zyxwvuts\n-----END PRIVATE KEY-----\n",
	[]string{"ActorKeyOfBobQwerty", "BEGIN PRIVATE KEY"}}

// RegisterSecrets registers one registration of each of Secrets in s, in
// stream "sealed", ids their namespaces, and adds ActorKeySecret when s
// keeps actor keys.
func RegisterSecrets(t *testing.T, s store.Store) {
	t.Helper()
	for _, c := range Secrets {
		_, err := s.Register(context.Background(), store.Registration{Stream: "sealed", ID: c.Namespace, Namespace: c.Namespace,
			URL: "https://receiver.example/" + c.Namespace, Config: store.Config(c.Config)})
		require.NoError(t, err, c.Namespace)
	}
	if ks, ok := s.(store.ActorKeyStore); ok {
		require.NoError(t, ks.AddActorKey(context.Background(), store.ActorKey{ID: ActorKeySecret.ID, PrivateKey: []byte(ActorKeySecret.PEM),
			Algorithm: "Ed25519", Fingerprint: "SHA256:test", Created: t0}))
	}
}

// FindSecret returns the first of Secrets' secrets that dump holds, as
// text or hex-encoded (as pg_dump writes bytea).
func FindSecret(dump []byte) (string, bool) {
	lower := strings.ToLower(string(dump))
	for _, c := range Secrets {
		for _, s := range c.Secrets {
			if strings.Contains(string(dump), s) || strings.Contains(lower, hex.EncodeToString([]byte(s))) {
				return c.Namespace + "'s " + s, true
			}
		}
	}
	for _, s := range ActorKeySecret.Secrets {
		if strings.Contains(string(dump), s) || strings.Contains(lower, hex.EncodeToString([]byte(s))) {
			return "the actor key's " + s, true
		}
	}
	return "", false
}

// RequireNoSecret fails t if dump holds any of Secrets' secrets (FindSecret).
func RequireNoSecret(t *testing.T, what string, dump []byte) {
	t.Helper()
	s, found := FindSecret(dump)
	require.False(t, found, "%s holds the secret %s in clear", what, s)
}

// SealingStore is a store that seals configs, as RunSealing checks it.
type SealingStore interface {
	store.Store
	store.Resealer
}

// RawConfig reads and writes a registration's stored config as the store
// keeps it, around the store (SQL), as an attacker with the database would.
type RawConfig struct {
	Get func(t *testing.T, k store.Key) []byte
	Set func(t *testing.T, k store.Key, v []byte)
}

// RunSealing checks a store that seals configs (store.Sealer): open
// returns the store over one database, opened anew with keyring each call,
// and raw reaches that database's configs.
func RunSealing(t *testing.T, open func(t *testing.T, keyring *seal.Keyring) SealingStore, raw RawConfig) {
	ctx := context.Background()
	k1 := seal.Generate()
	s := open(t, k1)
	RegisterSecrets(t, s)
	a, b := store.Key{Stream: "sealed", ID: "webhook"}, store.Key{Stream: "sealed", ID: "a2a"}

	t.Run("ConfigsAreStoredSealedAndReadBack", func(t *testing.T) {
		for _, c := range Secrets {
			k := store.Key{Stream: "sealed", ID: c.Namespace}
			stored := raw.Get(t, k)
			id, ok := seal.KeyID(stored)
			require.True(t, ok && id == k1.Primary(), "%s's config is stored as %.12q, not sealed under %s", c.Namespace, stored, k1.Primary())
			RequireNoSecret(t, "the stored config", stored)
			st, err := s.Get(ctx, k.Stream, k.ID)
			require.NoError(t, err)
			require.JSONEq(t, c.Config, string(st.Config), c.Namespace)
		}
		list, err := s.List(ctx, store.ListQuery{Stream: "sealed"})
		require.NoError(t, err)
		require.Len(t, list, len(Secrets))
		for _, st := range list {
			require.True(t, strings.HasPrefix(string(st.Config), "{"), "List returns %s's config sealed", st.ID)
		}
	})

	t.Run("ATamperedConfigDoesNotOpen", func(t *testing.T) {
		stored := raw.Get(t, a)
		defer raw.Set(t, a, stored)
		head, body, _ := strings.Cut(string(stored[len(seal.Prefix):]), ":")
		ct, err := base64.RawURLEncoding.DecodeString(body)
		require.NoError(t, err)
		ct[len(ct)/2] ^= 1 // one bit of the ciphertext
		raw.Set(t, a, []byte(seal.Prefix+head+":"+base64.RawURLEncoding.EncodeToString(ct)))
		_, err = s.Get(ctx, a.Stream, a.ID)
		require.ErrorIs(t, err, seal.ErrOpen)
		require.ErrorContains(t, err, k1.Primary())
	})

	t.Run("AConfigMovedToAnotherRowDoesNotOpen", func(t *testing.T) {
		stored := raw.Get(t, b)
		defer raw.Set(t, b, stored)
		raw.Set(t, b, raw.Get(t, a))
		_, err := s.Get(ctx, b.Stream, b.ID)
		require.ErrorIs(t, err, seal.ErrOpen)
		list, err := s.List(ctx, store.ListQuery{Stream: "sealed"})
		require.NoError(t, err, "one config that does not open is its registration's alone")
		require.Len(t, list, len(Secrets), "List shows, never skips, a registration whose config does not open")
		for _, st := range list {
			if st.Key() == b {
				require.Nil(t, st.Config)
				require.Contains(t, st.ConfigError, seal.ErrOpen.Error())
				continue
			}
			require.Empty(t, st.ConfigError, st.ID)
			require.NotEmpty(t, st.Config, st.ID)
		}
	})

	t.Run("AnUpdateOverAConfigThatNoLongerOpensIsAConflict", func(t *testing.T) {
		was, err := s.Get(ctx, b.Stream, b.ID)
		require.NoError(t, err)
		stored := raw.Get(t, b)
		defer raw.Set(t, b, stored)
		moved := raw.Get(t, a)
		raw.Set(t, b, moved) // sealed for another row: it no longer opens, as if it changed
		r := was.Registration
		r.URL = "https://moved.example/"
		_, err = s.Update(ctx, r, was.Registration)
		require.ErrorIs(t, err, journal.ErrConflict)
		require.Equal(t, moved, raw.Get(t, b), "nothing changed")
	})

	t.Run("AConfigThatDoesNotOpenFailsOnlyItsRegistration", func(t *testing.T) {
		be, ok := s.(Backend)
		require.True(t, ok, "the sealing store is a whole backend")
		const stream = "unopened"
		bad := register(t, be, store.Registration{Stream: stream, ID: "bad", Namespace: "webhook",
			URL: "https://bad.example/hook", Config: store.Config(Secrets[0].Config)})
		register(t, be, store.Registration{Stream: stream, ID: "good", Namespace: "webhook",
			URL: "https://good.example/hook", Config: store.Config(Secrets[0].Config)})
		t.Cleanup(func() { // the subtests after this one count the configs of Secrets alone
			require.NoError(t, s.Unregister(ctx, stream, "bad"))
			require.NoError(t, s.Unregister(ctx, stream, "good"))
		})
		raw.Set(t, bad.Key(), raw.Get(t, store.Key{Stream: stream, ID: "good"})) // sealed for another row
		appendN(t, be, stream, 1)

		rc := &receiver{}
		_, err := worker(t, be, rc, 10).RunOnce(ctx, time.Unix(1_900_000_000, 0), 10)
		require.NoError(t, err, "the claim serves the others")
		require.Equal(t, []arrival{{key: store.Key{Stream: stream, ID: "good"}, n: 1}}, rc.arrivals())

		list, err := s.List(ctx, store.ListQuery{Stream: stream})
		require.NoError(t, err)
		require.Len(t, list, 2)
		got := map[string]store.Status{list[0].ID: list[0], list[1].ID: list[1]}
		require.Equal(t, uint64(2), got["good"].NextSeq)
		require.Equal(t, uint64(1), got["bad"].NextSeq, "its cursor stays")
		require.Equal(t, 1, got["bad"].Attempts, "a failed attempt of its own")
		require.Contains(t, got["bad"].LastError, seal.ErrOpen.Error(), "its evidence says why")
	})

	t.Run("AClearConfigReadsAndResealSealsIt", func(t *testing.T) {
		raw.Set(t, a, []byte(Secrets[0].Config)) // as stored before a keyring
		st, err := s.Get(ctx, a.Stream, a.ID)
		require.NoError(t, err)
		require.JSONEq(t, Secrets[0].Config, string(st.Config))
		page, err := s.Reseal(ctx, store.Key{}, 100)
		require.NoError(t, err)
		require.Equal(t, store.ResealPage{Read: len(Secrets), Resealed: 1, Last: store.Key{Stream: "sealed", ID: "webhook"}}, page)
		id, _ := seal.KeyID(raw.Get(t, a))
		require.Equal(t, k1.Primary(), id)
	})

	t.Run("ResealReachesActorKeysAndSubscriptions", func(t *testing.T) {
		be, ok := s.(Backend)
		require.True(t, ok, "the sealing store is a whole backend")
		key := actorKey("https://sealed.example/users/alice#main-key", "pem of alice", 0)
		require.NoError(t, be.AddActorKey(ctx, key))
		subscribe(t, be, sub("sealed-tenant/", "hooks"))

		kx := k1.Rotated()
		n, err := open(t, kx).ResealOthers(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, n, "the two actor keys (RegisterSecrets' and this one) and the subscription's config")
		n, err = open(t, kx).ResealOthers(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "idempotent")

		kxOnly, err := kx.Without(k1.Primary())
		require.NoError(t, err)
		retired, ok := open(t, kxOnly).(Backend)
		require.True(t, ok)
		got, err := retired.ActorKey(ctx, key.ID)
		require.NoError(t, err, "the key opens without the retired key")
		require.Equal(t, key.PrivateKey, got.PrivateKey)
		got, err = retired.ActorKey(ctx, ActorKeySecret.ID)
		require.NoError(t, err)
		require.Equal(t, ActorKeySecret.PEM, string(got.PrivateKey))
		subs, err := retired.Subscriptions(ctx, "sealed-tenant/")
		require.NoError(t, err)
		require.Len(t, subs, 1)
		require.JSONEq(t, `{"secret":"s3cr3t"}`, string(subs[0].Config), "the subscription's config opens without the retired key")

		require.NoError(t, retired.RemoveActorKey(ctx, key.ID))
		_, err = retired.Unsubscribe(ctx, "sealed-tenant/", "hooks")
		require.NoError(t, err)
	})

	t.Run("RotateResealRetire", func(t *testing.T) {
		k2 := k1.Rotated()
		s2 := open(t, k2)
		var pages []store.ResealPage
		for after := (store.Key{}); ; {
			page, err := s2.Reseal(ctx, after, 3) // batches of 3: two pages of 4 configs
			require.NoError(t, err)
			pages = append(pages, page)
			if after = page.Last; !page.More {
				break
			}
		}
		require.Equal(t, []store.ResealPage{
			{Read: 3, Resealed: 3, Last: store.Key{Stream: "sealed", ID: "cloudevents"}, More: true},
			{Read: 1, Resealed: 1, Last: store.Key{Stream: "sealed", ID: "webhook"}},
		}, pages)
		again, err := s2.Reseal(ctx, store.Key{}, 100)
		require.NoError(t, err)
		require.Equal(t, 0, again.Resealed, "reseal is idempotent")

		k2only, err := k2.Without(k1.Primary())
		require.NoError(t, err)
		s3 := open(t, k2only)
		for _, c := range Secrets {
			st, err := s3.Get(ctx, "sealed", c.Namespace)
			require.NoError(t, err)
			require.JSONEq(t, c.Config, string(st.Config))
		}

		k1only := open(t, k1)
		_, err = k1only.Get(ctx, a.Stream, a.ID)
		require.ErrorIs(t, err, seal.ErrUnknownKey)
		require.ErrorContains(t, err, k2.Primary(), "the error names the key id")
		none := open(t, nil)
		_, err = none.Get(ctx, a.Stream, a.ID)
		require.ErrorIs(t, err, seal.ErrUnknownKey, "without a keyring a sealed config fails, never reads as empty")
	})
}
