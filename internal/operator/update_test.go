package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// racing is a store where another process writes the registration between
// each read-modify-write's read and its write: race runs before the nth
// Update (from 1).
type racing struct {
	store.Backend
	race func(n int)
	n    int
}

func (r *racing) Update(ctx context.Context, reg, was store.Registration) (store.Registration, error) {
	r.n++
	r.race(r.n)
	return r.Backend.Update(ctx, reg, was)
}

func webhookReg(t *testing.T, s store.Store) store.Registration {
	t.Helper()
	reg := store.Registration{Stream: "s", ID: "r", Namespace: webhook.Namespace, URL: "https://receiver.example/r",
		Config: store.Config(`{"secrets":["` + webhook.NewSecret() + `"]}`)}
	got, err := s.Register(t.Context(), reg)
	require.NoError(t, err)
	return got
}

// TestARotationRacedByAnotherKeepsBothSecrets: a rotation another process
// made between this rotation's read and its write is not undone: this one
// reads again and rotates what that one stored, so the secret each printed
// is stored (this one's signing, that one's retiring), as is a URL change
// made in the same race.
func TestARotationRacedByAnotherKeepsBothSecrets(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	mem := memory.New()
	webhookReg(t, mem)
	var theirs string
	s := &racing{Backend: mem, race: func(n int) {
		if n > 1 {
			return
		}
		v, err := operator.RotateSecret(t.Context(), mem, "s", "r", now, time.Hour)
		require.NoError(t, err)
		theirs = v.Secret
		st, err := mem.Get(t.Context(), "s", "r")
		require.NoError(t, err)
		st.URL = "https://moved.example/r"
		_, err = mem.Register(t.Context(), st.Registration)
		require.NoError(t, err)
	}}

	ours, err := operator.RotateSecret(t.Context(), s, "s", "r", now, time.Hour)
	require.NoError(t, err)
	require.Equal(t, 2, s.n, "read again once, after the conflict")
	st, err := mem.Get(t.Context(), "s", "r")
	require.NoError(t, err)
	cfg, err := webhook.ParseConfig(st.Config)
	require.NoError(t, err)
	require.Equal(t, []string{ours.Secret}, cfg.Secrets, "the secret this rotation answered signs")
	var retiring []string
	for _, r := range cfg.Retiring {
		retiring = append(retiring, r.Secret)
	}
	require.Contains(t, retiring, theirs, "the secret the other rotation answered still signs, retiring")
	require.Equal(t, "https://moved.example/r", st.URL, "the other process's update is kept")
	require.Equal(t, "https://moved.example/r", ours.URL, "and answered")
}

// TestAnUpdateUnderEndlessChangeIsAConflict: a registration changed
// between every read and write is refused with ErrConflict naming it after
// a bounded number of tries, and the rate asked for is not stored.
func TestAnUpdateUnderEndlessChangeIsAConflict(t *testing.T) {
	mem := memory.New()
	webhookReg(t, mem)
	s := &racing{Backend: mem, race: func(n int) {
		st, err := mem.Get(t.Context(), "s", "r")
		require.NoError(t, err)
		st.URL = fmt.Sprintf("https://moved.example/%d", n)
		_, err = mem.Register(t.Context(), st.Registration)
		require.NoError(t, err)
	}}
	_, err := operator.SetRate(t.Context(), s, "s", "r", store.Rate{Count: 5, Per: time.Second})
	require.ErrorIs(t, err, journal.ErrConflict)
	require.ErrorContains(t, err, store.Name("s", "r"))
	require.Equal(t, 5, s.n, "tries are bounded")
	st, err := mem.Get(t.Context(), "s", "r")
	require.NoError(t, err)
	require.True(t, st.Rate.IsZero(), "nothing of the refused update is stored")
	require.Equal(t, "https://moved.example/5", st.URL)
}

// TestSetRateKeepsAnUpdateMadeMeanwhile: a set-rate raced by another
// process's register applies to what that register stored.
func TestSetRateKeepsAnUpdateMadeMeanwhile(t *testing.T) {
	mem := memory.New()
	webhookReg(t, mem)
	s := &racing{Backend: mem, race: func(n int) {
		if n == 1 {
			st, err := mem.Get(t.Context(), "s", "r")
			require.NoError(t, err)
			st.Kinds = []string{"order.*"}
			_, err = mem.Register(t.Context(), st.Registration)
			require.NoError(t, err)
		}
	}}
	v, err := operator.SetRate(t.Context(), s, "s", "r", store.Rate{Count: 5, Per: time.Second})
	require.NoError(t, err)
	require.Equal(t, "5/s", v.Rate)
	st, err := mem.Get(t.Context(), "s", "r")
	require.NoError(t, err)
	require.Equal(t, []string{"order.*"}, st.Kinds, "the register made meanwhile is kept")
	require.Equal(t, store.Rate{Count: 5, Per: time.Second}, st.Rate)
}

// TestARegisterThatKeepsTheSecretsKeepsARotationMadeMeanwhile: a register
// without secrets, which keeps the registration's, raced by a rotation
// between its read and its write, keeps the secret that rotation answered
// rather than the ones it first read, and applies its own change.
func TestARegisterThatKeepsTheSecretsKeepsARotationMadeMeanwhile(t *testing.T) {
	mem := memory.New()
	first := webhookReg(t, mem)
	var rotated string
	s := &racing{Backend: mem, race: func(n int) {
		if n == 1 {
			v, err := operator.RotateSecret(t.Context(), mem, "s", "r", time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), 0)
			require.NoError(t, err)
			rotated = v.Secret
		}
	}}
	reg := first
	reg.Config, reg.URL = nil, "https://moved.example/r"
	st, old, secret, err := operator.Register(t.Context(), s, nil, reg)
	require.NoError(t, err)
	require.NotNil(t, old, "an update")
	require.Empty(t, secret, "no secret made: the registration's are kept")
	require.Equal(t, 2, s.n, "read again once, after the conflict")
	cfg, err := webhook.ParseConfig(st.Config)
	require.NoError(t, err)
	require.Equal(t, []string{rotated}, cfg.Secrets, "the rotated secret still signs")
	require.Equal(t, "https://moved.example/r", st.URL)
}

// readRaced is a store where another process writes right after the first
// read (Get or Subscriptions) of a read-modify-write: race runs once.
type readRaced struct {
	store.Backend
	race func()
}

func (r *readRaced) raced() {
	if race := r.race; race != nil {
		r.race = nil
		race()
	}
}

func (r *readRaced) Get(ctx context.Context, stream, id string) (store.Status, error) {
	defer r.raced()
	return r.Backend.Get(ctx, stream, id)
}

func (r *readRaced) Subscriptions(ctx context.Context, prefix string) ([]store.SubscriptionStatus, error) {
	defer r.raced()
	return r.Backend.Subscriptions(ctx, prefix)
}

// TestTwoRegistersCreatingAtOnceStoreTheSecretPrinted: a register without
// secrets that read the registration as absent, raced by another process's
// create of it between the read and the write, makes nothing over it: it
// reads again and keeps the secret the other printed, printing none, so
// that the one secret printed is the one that signs.
func TestTwoRegistersCreatingAtOnceStoreTheSecretPrinted(t *testing.T) {
	mem := memory.New()
	reg := store.Registration{Stream: "s", ID: "r", Namespace: webhook.Namespace, URL: "https://receiver.example/r"}
	var theirs string
	s := &readRaced{Backend: mem, race: func() {
		_, old, secret, err := operator.Register(t.Context(), mem, nil, reg)
		require.NoError(t, err)
		require.Nil(t, old, "theirs is the create")
		theirs = secret
	}}
	st, old, ours, err := operator.Register(t.Context(), s, nil, reg)
	require.NoError(t, err)
	require.NotEmpty(t, theirs)
	require.Empty(t, ours, "no second secret printed")
	require.NotNil(t, old, "an update of the one made meanwhile")
	cfg, err := webhook.ParseConfig(st.Config)
	require.NoError(t, err)
	require.Equal(t, []string{theirs}, cfg.Secrets, "the secret printed signs")
}

// webhookSecrets returns the secrets config c signs with.
func webhookSecrets(t *testing.T, c store.Config) []string {
	t.Helper()
	cfg, err := webhook.ParseConfig(c)
	require.NoError(t, err)
	return cfg.Secrets
}

// TestTwoSubscribesCreatingAtOnceStoreTheSecretPrinted: Register's race
// for a subscription: one that read none, raced by another process's create
// of it, keeps the secret that one printed, which its registrations sign
// with, and prints none.
func TestTwoSubscribesCreatingAtOnceStoreTheSecretPrinted(t *testing.T) {
	mem := memory.New()
	_, err := mem.Append(t.Context(), "t/1", journal.Entry{ID: "e1", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	sub := store.Subscription{Prefix: "t/", ID: "h", Namespace: webhook.Namespace, URL: "https://receiver.example/h"}
	var theirs string
	s := &readRaced{Backend: mem, race: func() {
		_, secret, err := operator.Subscribe(t.Context(), mem, nil, sub, false)
		require.NoError(t, err)
		theirs = secret
	}}
	st, ours, err := operator.Subscribe(t.Context(), s, nil, sub, false)
	require.NoError(t, err)
	require.NotEmpty(t, theirs)
	require.Empty(t, ours, "no second secret printed")
	require.Equal(t, []string{theirs}, webhookSecrets(t, st.Config), "the secret printed is stored")
	reg, err := mem.Get(t.Context(), "t/1", "h")
	require.NoError(t, err)
	require.Equal(t, []string{theirs}, webhookSecrets(t, reg.Config), "and signs")
}

// TestASubscribeThatKeepsTheSecretsKeepsARotationMadeMeanwhile: a
// register of a prefix without secrets, which keeps the subscription's,
// raced by another process's register of it with a new secret (its
// rotation) between the read and the write, keeps that new secret rather
// than the one it first read, and applies its own change.
func TestASubscribeThatKeepsTheSecretsKeepsARotationMadeMeanwhile(t *testing.T) {
	mem := memory.New()
	sub := store.Subscription{Prefix: "t/", ID: "h", Namespace: webhook.Namespace, URL: "https://receiver.example/h"}
	_, first, err := operator.Subscribe(t.Context(), mem, nil, sub, false)
	require.NoError(t, err)
	rotated := webhook.NewSecret()
	s := &readRaced{Backend: mem, race: func() {
		withSecret := sub
		withSecret.Config = store.Config(`{"secrets":["` + rotated + `"]}`)
		_, secret, err := operator.Subscribe(t.Context(), mem, nil, withSecret, false)
		require.NoError(t, err)
		require.Empty(t, secret, "its secret is given, not made")
	}}
	moved := sub
	moved.URL = "https://moved.example/h"
	st, secret, err := operator.Subscribe(t.Context(), s, nil, moved, false)
	require.NoError(t, err)
	require.Empty(t, secret, "no secret made: the subscription's are kept")
	require.Equal(t, []string{rotated}, webhookSecrets(t, st.Config), "the rotated secret, not %s, still signs", first)
	require.Equal(t, "https://moved.example/h", st.URL)
}

// TestARegisterRacedByAnUnregisterCreatesTheRegistration: a register that
// read the registration, raced by another process's unregister of it
// between the read and the write, reads again and creates it (a register
// never answers "not found").
func TestARegisterRacedByAnUnregisterCreatesTheRegistration(t *testing.T) {
	mem := memory.New()
	reg := store.Registration{Stream: "s", ID: "r", Namespace: webhook.Namespace, URL: "https://receiver.example/r"}
	_, _, first, err := operator.Register(t.Context(), mem, nil, reg)
	require.NoError(t, err)
	s := &readRaced{Backend: mem, race: func() {
		require.NoError(t, mem.Unregister(t.Context(), reg.Stream, reg.ID))
	}}
	st, old, secret, err := operator.Register(t.Context(), s, nil, reg)
	require.NoError(t, err)
	require.Nil(t, old, "a create: the one read is gone")
	require.NotEmpty(t, secret)
	require.NotEqual(t, first, secret, "a new secret: the old one left with its registration")
	require.Equal(t, []string{secret}, webhookSecrets(t, st.Config), "the secret printed signs")
}
