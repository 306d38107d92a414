package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

var actorKeyTests = []test{
	testActorKeyIsHeldOnceByItsID,
	testActorKeyRotationReplacesItAndBumpsItsVersion,
	testActorKeyListNeverHoldsAPrivateKey,
	testActorKeyRemovedIsGone,
	testActorKeyWithABadFieldIsRefusedAndNothingStored,
}

func actorKey(id, pem string, seconds int) store.ActorKey {
	return store.ActorKey{ID: id, PrivateKey: []byte(pem), Algorithm: "RSA", Fingerprint: "SHA256:" + pem, Created: at(seconds)}
}

func testActorKeyIsHeldOnceByItsID(t *testing.T, b Backend) {
	ctx := t.Context()
	k := actorKey("https://a.example/users/alice#main-key", "pem one", 0)
	require.NoError(t, b.AddActorKey(ctx, k))
	got, err := b.ActorKey(ctx, k.ID)
	require.NoError(t, err)
	k.Version = 1
	require.Equal(t, k, got, "every field comes back as stored, at version 1")
	v, err := b.ActorKeyVersion(ctx, k.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, v)

	err = b.AddActorKey(ctx, actorKey(k.ID, "pem two", 5))
	require.ErrorIs(t, err, journal.ErrConflict, "a key id is held once")
	got, err = b.ActorKey(ctx, k.ID)
	require.NoError(t, err)
	require.Equal(t, "pem one", string(got.PrivateKey), "the refused add changed nothing")

	_, err = b.ActorKey(ctx, "https://a.example/users/nobody#main-key")
	require.ErrorIs(t, err, journal.ErrNotFound)
	_, err = b.ActorKeyVersion(ctx, "https://a.example/users/nobody#main-key")
	require.ErrorIs(t, err, journal.ErrNotFound)
}

func testActorKeyRotationReplacesItAndBumpsItsVersion(t *testing.T, b Backend) {
	ctx := t.Context()
	k := actorKey("https://a.example/users/alice#main-key", "pem one", 0)
	require.NoError(t, b.AddActorKey(ctx, k))
	next := store.ActorKey{ID: k.ID, PrivateKey: []byte("pem two"), Algorithm: "Ed25519", Fingerprint: "SHA256:two"}
	shown, err := b.RotateActorKey(ctx, next, at(60))
	require.NoError(t, err)
	require.Nil(t, shown.PrivateKey, "a rotation's answer holds no private key")
	want := store.ActorKey{ID: k.ID, Algorithm: "Ed25519", Fingerprint: "SHA256:two", Version: 2, Created: at(0), Rotated: at(60)}
	require.Equal(t, want, shown)
	got, err := b.ActorKey(ctx, k.ID)
	require.NoError(t, err)
	want.PrivateKey = []byte("pem two")
	require.Equal(t, want, got)
	shown, err = b.RotateActorKey(ctx, next, at(120))
	require.NoError(t, err)
	require.EqualValues(t, 3, shown.Version, "every rotation bumps the version, even to the same key")

	_, err = b.RotateActorKey(ctx, actorKey("https://a.example/users/nobody#main-key", "x", 0), at(60))
	require.ErrorIs(t, err, journal.ErrNotFound)
	_, err = b.RotateActorKey(ctx, store.ActorKey{ID: k.ID, Algorithm: "RSA", Fingerprint: "f"}, at(60))
	require.ErrorIs(t, err, journal.ErrInvalid, "a rotation needs the new private key")
	v, err := b.ActorKeyVersion(ctx, k.ID)
	require.NoError(t, err)
	require.EqualValues(t, 3, v, "a refused rotation changed nothing")
}

func testActorKeyListNeverHoldsAPrivateKey(t *testing.T, b Backend) {
	ctx := t.Context()
	list, err := b.ActorKeys(ctx)
	require.NoError(t, err)
	require.NotNil(t, list)
	require.Empty(t, list)
	require.NoError(t, b.AddActorKey(ctx, actorKey("https://b.example/u/z#k", "pem z", 1)))
	require.NoError(t, b.AddActorKey(ctx, actorKey("https://a.example/u/a#k", "pem a", 2)))
	list, err = b.ActorKeys(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "https://a.example/u/a#k", list[0].ID, "by id")
	for _, k := range list {
		require.Nil(t, k.PrivateKey, k.ID)
		require.EqualValues(t, 1, k.Version)
		require.Equal(t, "SHA256:pem "+k.ID[len(k.ID)-3:len(k.ID)-2], k.Fingerprint)
	}
}

func testActorKeyRemovedIsGone(t *testing.T, b Backend) {
	ctx := t.Context()
	k := actorKey("https://a.example/users/alice#main-key", "pem one", 0)
	require.NoError(t, b.AddActorKey(ctx, k))
	require.NoError(t, b.RemoveActorKey(ctx, k.ID))
	_, err := b.ActorKey(ctx, k.ID)
	require.ErrorIs(t, err, journal.ErrNotFound)
	require.ErrorIs(t, b.RemoveActorKey(ctx, k.ID), journal.ErrNotFound)
	require.NoError(t, b.AddActorKey(ctx, actorKey(k.ID, "pem two", 9)), "a removed id may be added again")
	v, err := b.ActorKeyVersion(ctx, k.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, v)
}

func testActorKeyWithABadFieldIsRefusedAndNothingStored(t *testing.T, b Backend) {
	ctx := t.Context()
	good := actorKey("https://a.example/users/alice#main-key", "pem", 0)
	for field, k := range map[string]store.ActorKey{
		"key_id":      func() store.ActorKey { k := good; k.ID = ""; return k }(),
		"private_key": func() store.ActorKey { k := good; k.PrivateKey = nil; return k }(),
		"algorithm":   func() store.ActorKey { k := good; k.Algorithm = ""; return k }(),
		"created":     func() store.ActorKey { k := good; k.Created = time.Time{}; return k }(),
	} {
		err := b.AddActorKey(ctx, k)
		require.ErrorIs(t, err, journal.ErrInvalid, field)
		require.ErrorContains(t, err, field)
	}
	list, err := b.ActorKeys(ctx)
	require.NoError(t, err)
	require.Empty(t, list)
}
