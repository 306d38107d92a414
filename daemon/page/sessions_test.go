package page

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOneTokensLoginsEndOnlyItsOwnSessions: a token logging in past
// maxSessionsPerToken ends its own oldest session, and another token's
// session, older still, lives on.
func TestOneTokensLoginsEndOnlyItsOwnSessions(t *testing.T) {
	ss := sessions{byID: map[[16]byte]held{}}
	t0 := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	admin, tenant := held{issued: t0, hash: [32]byte{1}}, [32]byte{2}
	ss.add([16]byte{0xff}, admin)
	nonce := func(i int) [16]byte { return [16]byte{byte(i), byte(i >> 8)} }
	for i := range maxSessionsPerToken + 5 {
		ss.add(nonce(i), held{issued: t0.Add(time.Duration(i+1) * time.Second), hash: tenant})
	}
	now := t0.Add(time.Hour)
	_, ok := ss.live([16]byte{0xff}, now)
	require.True(t, ok, "the admin's session lives")
	for i := range maxSessionsPerToken + 5 {
		_, ok := ss.live(nonce(i), now)
		require.Equal(t, i >= 5, ok, "tenant session %d", i)
	}
}
