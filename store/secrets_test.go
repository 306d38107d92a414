package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store"
)

func TestHoldsSecretNamesTheProjectionsSecretKeys(t *testing.T) {
	for cfg, want := range map[string]bool{
		`{"secrets":["whsec_x"]}`:                           true,
		`{"source":"s","token":"t"}`:                        true,
		`{"auth_scheme":"Bearer","credentials":"c"}`:        true,
		`{"key_id":"k","private_key":"pem"}`:                true,
		`{"source":"s","structured":true}`:                  false,
		`{"token":"","secrets":[],"credentials":null}`:      false,
		`{"source":"s","headers":{"X-Api-Key":"k"}}`:        true,
		`{"source":"s","client_cert":"c","client_key":"k"}`: true,
		`{"source":"s","proxy":"http://u:p@proxy:3128"}`:    true,
		`{"source":"s","headers":{}}`:                       false,
		`not json`:                                          true,
		// A projection reads a key in any case: so does the check.
		`{"Secrets":["whsec_x"]}`:    true,
		`{"\u017fecrets":["x"]}`:     true,
		`{"TOKEN":"t","Source":"s"}`: true,
	} {
		require.Equal(t, want, store.HoldsSecret(store.Config(cfg)), cfg)
	}
}

func TestSealerKeepsOrRefusesWithoutAKeyring(t *testing.T) {
	k := store.Key{Stream: "s", ID: "r"}
	secret := store.Config(`{"token":"t"}`)
	kept, err := store.Sealer{}.SealConfig(k, secret)
	require.NoError(t, err)
	require.Equal(t, string(secret), string(kept), "without a keyring and not required, kept as given")
	_, err = store.Sealer{Required: true}.SealConfig(k, secret)
	require.ErrorIs(t, err, store.ErrNoKeyring)
	none, err := store.Sealer{Required: true}.SealConfig(k, nil)
	require.NoError(t, err)
	require.Nil(t, none, "no config is stored as none")

	s := store.Sealer{Keyring: seal.Generate()}
	sealed, err := s.SealConfig(k, secret)
	require.NoError(t, err)
	opened, err := s.OpenConfig(k, sealed)
	require.NoError(t, err)
	require.Equal(t, string(secret), string(opened))
	_, err = store.Sealer{}.OpenConfig(k, sealed)
	require.ErrorIs(t, err, seal.ErrUnknownKey)
	require.ErrorContains(t, err, "HERALD_KEYRING")
}

// BenchmarkOpenConfig is what a claim adds per registration: opening its
// sealed config (a webhook's, 60 bytes).
func BenchmarkOpenConfig(b *testing.B) {
	s := store.Sealer{Keyring: seal.Generate()}
	k := store.Key{Stream: "orders/1001", ID: "billing"}
	sealed, err := s.SealConfig(k, store.Config(`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`))
	require.NoError(b, err)
	for b.Loop() {
		if _, err := s.OpenConfig(k, sealed); err != nil {
			b.Fatal(err)
		}
	}
}
