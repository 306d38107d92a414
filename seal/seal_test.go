package seal_test

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/seal"
)

var ad = seal.AD("herald registration config", "orders", "billing")

func TestASealedValueOpensOnlyUnchangedAndWhereItWasSealed(t *testing.T) {
	k := seal.Generate()
	v := k.Seal([]byte(`{"secrets":["whsec_x"]}`), ad)
	require.True(t, strings.HasPrefix(string(v), seal.Prefix+k.Primary()+":"), "%s", v)
	require.NotContains(t, string(v), "whsec_x")
	got, err := k.Open(v, ad)
	require.NoError(t, err)
	require.Equal(t, `{"secrets":["whsec_x"]}`, string(got))

	require.NotEqual(t, string(v), string(k.Seal([]byte(`{"secrets":["whsec_x"]}`), ad)), "each seal draws a new nonce")
	for i := len(seal.Prefix) + len(k.Primary()) + 1; i < len(v); i++ {
		bad := []byte(string(v))
		bad[i] ^= 1
		_, err := k.Open(bad, ad)
		require.Error(t, err, "byte %d changed", i)
	}
	for _, other := range [][]byte{seal.AD("herald registration config", "orders", "shipping"), seal.AD("herald registration config", "orders/billing", ""), nil} {
		_, err := k.Open(v, other)
		require.ErrorIs(t, err, seal.ErrOpen)
	}
	_, err = seal.Generate().Open(v, ad)
	require.ErrorIs(t, err, seal.ErrUnknownKey)
	var ke *seal.KeyError
	require.ErrorAs(t, err, &ke)
	require.Equal(t, k.Primary(), ke.ID)
	_, err = (*seal.Keyring)(nil).Open(v, ad)
	require.ErrorIs(t, err, seal.ErrUnknownKey, "no keyring opens nothing")
	_, err = k.Open([]byte(`{"a":1}`), ad)
	require.ErrorIs(t, err, seal.ErrMalformed)
}

func TestRotatedSealsUnderTheNewKeyAndOpensTheOld(t *testing.T) {
	k1 := seal.Generate()
	old := k1.Seal([]byte("a"), ad)
	k2 := k1.Rotated()
	require.Equal(t, []string{k1.Primary(), k2.Primary()}, k2.IDs())
	id, ok := seal.KeyID(k2.Seal([]byte("b"), ad))
	require.True(t, ok)
	require.Equal(t, k2.Primary(), id)
	got, err := k2.Open(old, ad)
	require.NoError(t, err)
	require.Equal(t, "a", string(got))

	_, err = k2.Without(k2.Primary())
	require.ErrorContains(t, err, "primary")
	_, err = k2.Without("nope")
	require.ErrorContains(t, err, `no key "nope"`)
	k3, err := k2.Without(k1.Primary())
	require.NoError(t, err)
	_, err = k3.Open(old, ad)
	require.ErrorIs(t, err, seal.ErrUnknownKey)
}

func TestParseReadsWhatMarshalWritesAndTheEnvironmentForm(t *testing.T) {
	k := seal.Generate().Rotated()
	back, err := seal.Parse(string(k.Marshal()))
	require.NoError(t, err)
	require.Equal(t, k.IDs(), back.IDs())
	v := k.Seal([]byte("x"), ad)
	got, err := back.Open(v, ad)
	require.NoError(t, err)
	require.Equal(t, "x", string(got))

	var entries []string
	for _, line := range strings.Split(string(k.Marshal()), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			entries = append(entries, line)
		}
	}
	env, err := seal.Parse(strings.Join(entries, ","))
	require.NoError(t, err)
	require.Equal(t, k.Primary(), env.Primary(), "the last is the primary")
}

func TestParseRefusesABadKeyringWithoutQuotingAKey(t *testing.T) {
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	short := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	for _, c := range []struct{ name, text, want string }{
		{"empty", "# only a comment\n", "no key"},
		{"no colon", "k1" + key, "entry 1 is not id:base64key"},
		{"bad base64", "k1:" + key[:10] + "!" + key[11:], "not base64"},
		{"short key", "k1:" + short, "is 16 bytes"},
		{"bad id", "k/1:" + key, "key id"},
		{"twice", "k1:" + key + "\nk1:" + key, "given twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := seal.Parse(c.text)
			require.ErrorContains(t, err, c.want)
			require.NotContains(t, err.Error(), key[:12])
			require.NotContains(t, err.Error(), short[:12])
		})
	}
}

func TestKeyFilesAreMadeReadableByTheirOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keyring")
	k := seal.Generate()
	require.NoError(t, seal.CreateFile(path, k))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.ErrorIs(t, seal.CreateFile(path, seal.Generate()), os.ErrExist, "never overwritten")

	require.NoError(t, os.Chmod(path, 0o644))
	k2 := k.Rotated()
	require.NoError(t, seal.ReplaceFile(path, k2))
	fi, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	back, err := seal.LoadFile(path)
	require.NoError(t, err)
	require.Equal(t, k2.IDs(), back.IDs())
	require.True(t, errors.Is(seal.ReplaceFile(filepath.Join(t.TempDir(), "none"), k2), os.ErrNotExist))
}

// A key file longer than MaxFileBytes is refused having read no more:
// a keyring path pointing at a device or a log (/dev/zero) must not fill
// memory.
func TestLoadFileReadsAtMostMaxFileBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keyring")
	k := seal.Generate()
	long := append(k.Marshal(), strings.Repeat("#", seal.MaxFileBytes)...)
	require.NoError(t, os.WriteFile(path, long, 0o600))
	_, err := seal.LoadFile(path)
	require.ErrorContains(t, err, "is longer than")
	require.NoError(t, os.WriteFile(path, long[:seal.MaxFileBytes], 0o600))
	back, err := seal.LoadFile(path)
	require.NoError(t, err)
	require.Equal(t, k.IDs(), back.IDs())
}
