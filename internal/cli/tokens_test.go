package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/store"
)

// TestTokensCreateShowsTheSecretOnceAndListAndRevokeNeverDo: create prints
// an hrt_ secret of 256 bits; list and revoke show the token without it,
// and the database holds only its SHA-256.
func TestTokensCreateShowsTheSecretOnceAndListAndRevokeNeverDo(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "", "migrate", "up")
	var created operator.CreatedToken
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "--json", "tokens", "create", "--name", "tenant 42", "--role", "operator",
		"--scope", "tenant/42/", "--scope", "shared/42/")), &created))
	require.True(t, strings.HasPrefix(created.Secret, store.TokenPrefix), created.Secret)
	require.Len(t, created.Secret, len(store.TokenPrefix)+43, "32 random bytes, base64url")
	require.Equal(t, []string{"tenant/42/", "shared/42/"}, created.Scope)
	require.Equal(t, store.RoleOperator, created.Role)

	text := heraldOK(t, db, "", "tokens", "create", "--name", "ci", "--role", "producer")
	require.Contains(t, text, "shown this once:\n"+store.TokenPrefix)

	list := heraldOK(t, db, "", "tokens", "list")
	require.Contains(t, list, created.ID)
	require.Contains(t, list, "tenant/42/ shared/42/")
	require.Contains(t, list, "every stream")
	require.NotContains(t, list, store.TokenPrefix, "no secret is listed")
	require.Equal(t, list, heraldOK(t, db, "", "tokens"), "tokens alone lists them")

	revoked := heraldOK(t, db, "", "--json", "tokens", "revoke", created.ID)
	require.NotContains(t, revoked, store.TokenPrefix)
	var v operator.TokenView
	require.NoError(t, json.Unmarshal([]byte(revoked), &v))
	require.False(t, v.Revoked.IsZero())

	var all []operator.TokenView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "--json", "tokens", "list")), &all))
	require.Len(t, all, 2)
	require.Equal(t, v.Revoked, all[0].Revoked, "the revoked one is listed as revoked")
	require.True(t, all[1].Revoked.IsZero())
}

// TestTokensCreateRefusesBadInputNamingTheFlag: a bad role, a scope on an
// admin, a bad prefix and a missing name are usage errors naming the flag,
// and make no token.
func TestTokensCreateRefusesBadInputNamingTheFlag(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "", "migrate", "up")
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--name", "x", "--role", "root"}, "--role"},
		{[]string{"--name", "x", "--role", "admin", "--scope", "tenant/42/"}, "--scope"},
		{[]string{"--name", "x", "--role", "reader", "--scope", "a/", "--scope", "bad\x00"}, "--scope (the 2nd)"},
		{[]string{"--name", "x", "--role", "reader", "--scope", "a/", "--scope", "a/"}, "--scope (the 2nd)"},
		{[]string{"--name", "a\nb", "--role", "reader"}, "--name"},
		{[]string{"--role", "reader"}, "--name"},
	} {
		r := runCLI(t, db, "", append([]string{"tokens", "create"}, c.args...)...)
		require.Equal(t, ExitUsage, r.code, "%q: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.flag, c.args)
	}
	require.Contains(t, heraldOK(t, db, "", "tokens", "list"), "No token")
	r := runCLI(t, db, "", "tokens", "revoke", "tok_none")
	require.Equal(t, ExitUsage, r.code, "an unknown id is bad input: %s", r.stderr)
	require.Contains(t, r.stderr, "herald tokens list")
}

// TestTokensCreateMakesANewSQLiteDatabase: tokens create on a path with no
// file makes and migrates it, as keys add does (a token may come before any
// registration); a refused create makes none.
func TestTokensCreateMakesANewSQLiteDatabase(t *testing.T) {
	db := newDB(t)
	r := runCLI(t, db, "", "tokens", "create", "--name", "x", "--role", "root")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	requireNoDB(t, db, "a refused create made the database")

	text := heraldOK(t, db, "", "tokens", "create", "--name", "ci", "--role", "producer")
	require.Contains(t, text, "shown this once:\n"+store.TokenPrefix)
	require.Contains(t, heraldOK(t, db, "", "tokens", "list"), "ci")
}

// TestTokensCreateSaysWhereItsTokenGoes: a producer's token is sent to the
// API address, never offered the page, which refuses it; a reader's (or
// more) may log in to the page.
func TestTokensCreateSaysWhereItsTokenGoes(t *testing.T) {
	db := newDB(t)
	producer := heraldOK(t, db, "", "tokens", "create", "--name", "ci", "--role", "producer")
	require.Contains(t, producer, "to the API address (herald run --api-addr) to append; the page needs a reader's token or more")
	require.NotContains(t, producer, "log in to the page")
	require.Contains(t, heraldOK(t, db, "", "tokens", "create", "--name", "ops", "--role", "reader"), "log in to the page with it")
}
