package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

var tokenTests = []test{
	testTokenIsFoundByItsSecretsHashOnly,
	testTokenListHoldsEveryTokenOldestFirst,
	testRevokedTokenIsFoundRevokedAndKeepsItsFirstInstant,
	testTokenUsedOnlyMovesForward,
	testTokenWithATakenIDOrSecretIsAConflict,
	testTokenWithABadFieldIsRefusedAndNothingStored,
}

func mint(t *testing.T, name string, role store.Role, scope []string, seconds int) (string, store.Token) {
	t.Helper()
	secret, tok, err := store.MintToken(name, role, scope, at(seconds))
	require.NoError(t, err)
	return secret, tok
}

func testTokenIsFoundByItsSecretsHashOnly(t *testing.T, b Backend) {
	ctx := t.Context()
	secret, tok := mint(t, "tenant 42's portal", store.RoleOperator, []string{"tenant/42/", "shared/42"}, 0)
	require.NoError(t, b.CreateToken(ctx, tok))
	got, err := b.TokenByHash(ctx, store.HashToken(secret))
	require.NoError(t, err)
	require.Equal(t, tok, got, "every field comes back as stored")

	_, err = b.TokenByHash(ctx, store.HashToken(secret+"x"))
	require.ErrorIs(t, err, journal.ErrNotFound)
	_, err = b.TokenByHash(ctx, []byte(secret))
	require.ErrorIs(t, err, journal.ErrNotFound, "the secret itself is not what is stored")
}

func testTokenListHoldsEveryTokenOldestFirst(t *testing.T, b Backend) {
	ctx := t.Context()
	ts, err := b.Tokens(ctx)
	require.NoError(t, err)
	require.NotNil(t, ts, "none is an empty list")
	require.Empty(t, ts)
	_, late := mint(t, "late", store.RoleReader, nil, 20)
	_, early := mint(t, "early", store.RoleAdmin, nil, 10)
	_, revoked := mint(t, "revoked", store.RoleProducer, []string{"a/"}, 15)
	for _, tok := range []store.Token{late, early, revoked} {
		require.NoError(t, b.CreateToken(ctx, tok))
	}
	revoked, err = b.RevokeToken(ctx, revoked.ID, at(30))
	require.NoError(t, err)
	ts, err = b.Tokens(ctx)
	require.NoError(t, err)
	require.Equal(t, []store.Token{early, revoked, late}, ts)
}

func testRevokedTokenIsFoundRevokedAndKeepsItsFirstInstant(t *testing.T, b Backend) {
	ctx := t.Context()
	secret, tok := mint(t, "ci", store.RoleProducer, nil, 0)
	require.NoError(t, b.CreateToken(ctx, tok))
	got, err := b.RevokeToken(ctx, tok.ID, at(60))
	require.NoError(t, err)
	require.Equal(t, at(60), got.Revoked)
	got, err = b.RevokeToken(ctx, tok.ID, at(120))
	require.NoError(t, err)
	require.Equal(t, at(60), got.Revoked, "revoking twice keeps the first instant")
	found, err := b.TokenByHash(ctx, store.HashToken(secret))
	require.NoError(t, err)
	require.Equal(t, at(60), found.Revoked)

	_, err = b.RevokeToken(ctx, "tok_none", at(60))
	require.ErrorIs(t, err, journal.ErrNotFound)
}

func testTokenUsedOnlyMovesForward(t *testing.T, b Backend) {
	ctx := t.Context()
	secret, tok := mint(t, "ci", store.RoleReader, nil, 0)
	require.NoError(t, b.CreateToken(ctx, tok))
	require.NoError(t, b.TokenUsed(ctx, tok.ID, at(120)))
	require.NoError(t, b.TokenUsed(ctx, tok.ID, at(60)))
	require.NoError(t, b.TokenUsed(ctx, "tok_none", at(60)), "an unknown id is no error")
	got, err := b.TokenByHash(ctx, store.HashToken(secret))
	require.NoError(t, err)
	require.Equal(t, at(120), got.LastUsed)
}

func testTokenWithATakenIDOrSecretIsAConflict(t *testing.T, b Backend) {
	ctx := t.Context()
	_, tok := mint(t, "one", store.RoleReader, nil, 0)
	require.NoError(t, b.CreateToken(ctx, tok))
	_, other := mint(t, "two", store.RoleReader, nil, 0)
	sameID, sameHash := other, other
	sameID.ID, sameHash.Hash = tok.ID, tok.Hash
	require.ErrorIs(t, b.CreateToken(ctx, sameID), journal.ErrConflict)
	require.ErrorIs(t, b.CreateToken(ctx, sameHash), journal.ErrConflict)
	ts, err := b.Tokens(ctx)
	require.NoError(t, err)
	require.Equal(t, []store.Token{tok}, ts)
}

func testTokenWithABadFieldIsRefusedAndNothingStored(t *testing.T, b Backend) {
	ctx := t.Context()
	_, good := mint(t, "good", store.RoleOperator, []string{"tenant/42/"}, 0)
	for field, bad := range map[string]func(*store.Token){
		"id":       func(t *store.Token) { t.ID = "" },
		"name":     func(t *store.Token) { t.Name = "a\nb" },
		"role":     func(t *store.Token) { t.Role = "root" },
		"hash":     func(t *store.Token) { t.Hash = t.Hash[:16] },
		"created":  func(t *store.Token) { t.Created = time.Time{} },
		"scope":    func(t *store.Token) { t.Role = store.RoleAdmin },
		"scope[1]": func(t *store.Token) { t.Scope = []string{"a/", "a/"} },
	} {
		tok := good
		tok.Scope = append([]string(nil), good.Scope...)
		bad(&tok)
		err := b.CreateToken(ctx, tok)
		require.ErrorIs(t, err, journal.ErrInvalid, field)
		require.ErrorContains(t, err, field, "the error names the field")
	}
	ts, err := b.Tokens(ctx)
	require.NoError(t, err)
	require.Empty(t, ts)
}
