package operator_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
)

// TestREADMEHasTheAccessTable: README's table of roles is AccessTable's
// output, so that the docs say what the handlers check.
func TestREADMEHasTheAccessTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(readme), operator.AccessTable()),
		"README.md's table under \"Tokens, roles and scopes\" is not operator.AccessTable(); paste it:\n%s", operator.AccessTable())
}

// TestScopedListPagesThroughItsPrefixes: a scoped List, page by page with
// any limit, returns exactly the registrations under the scope's prefixes
// (one covering another counted once), in key order.
func TestScopedListPagesThroughItsPrefixes(t *testing.T) {
	s := memory.New()
	var want []string
	for _, stream := range []string{"a", "t/4", "t/40/x", "t/41", "t/42", "t/42/a", "t/42/b", "t/420/a", "t/43/a", "u/42/a"} {
		for _, id := range []string{"1", "2"} {
			_, err := s.Register(t.Context(), push.Registration{Stream: stream, ID: id, Namespace: "webhook", URL: "https://x.example/"})
			require.NoError(t, err)
			if strings.HasPrefix(stream, "t/4") || strings.HasPrefix(stream, "u/") {
				want = append(want, stream+" "+id)
			}
		}
	}
	tok := store.Token{ID: "t", Role: store.RoleReader, Scope: []string{"u/", "t/42/", "t/4"}}
	scoped := operator.Scoped(s, tok)
	for limit := 1; limit <= len(want)+1; limit++ {
		var got []string
		after := store.Key{}
		for {
			page, err := scoped.List(t.Context(), store.ListQuery{After: after, Limit: limit})
			require.NoError(t, err)
			for _, st := range page {
				got = append(got, st.Stream+" "+st.ID)
			}
			if len(page) < limit {
				break
			}
			after = page[len(page)-1].Key()
		}
		require.Equal(t, want, got, "limit %d", limit)
	}
	none, err := operator.Scoped(s, store.Token{Scope: []string{"v/"}}).List(t.Context(), store.ListQuery{})
	require.NoError(t, err)
	require.Empty(t, none)
}

// TestScopedUpdateSeesOnlyItsScope: a scoped Update of a registration out
// of its scope is refused as if it did not exist, and changes nothing.
func TestScopedUpdateSeesOnlyItsScope(t *testing.T) {
	s := memory.New()
	was, err := s.Register(t.Context(), push.Registration{Stream: "u/1", ID: "r", Namespace: "webhook", URL: "https://x.example/"})
	require.NoError(t, err)
	r := was
	r.URL = "https://attacker.example/"
	_, err = operator.Scoped(s, store.Token{ID: "t", Role: store.RoleOperator, Scope: []string{"t/"}}).Update(t.Context(), r, was)
	require.ErrorIs(t, err, journal.ErrNotFound)
	st, err := s.Get(t.Context(), "u/1", "r")
	require.NoError(t, err)
	require.Equal(t, "https://x.example/", st.URL)
	_, err = operator.Scoped(s, store.Token{ID: "t", Role: store.RoleOperator, Scope: []string{"u/"}}).Update(t.Context(), r, was)
	require.NoError(t, err, "within its scope it applies")
}

// materialisedAfterGet is a store whose first Get is followed, before the
// caller's write, by the tenant's first record on a new stream, which an
// admin's subscription of tenant/ follows (its registration made).
type materialisedAfterGet struct {
	*memory.Store
	then func()
}

func (m *materialisedAfterGet) Get(ctx context.Context, stream, id string) (store.Status, error) {
	st, err := m.Store.Get(ctx, stream, id)
	if then := m.then; then != nil {
		m.then = nil
		then()
	}
	return st, err
}

// TestScopedWriteIsNotMadeToARegistrationNotFoundBeforeIt: a scoped write
// to a registration that does not exist is refused as such, not made, even
// when a subscription beyond the token's scope makes that registration
// between the check and the write (the tenant's own first record on a new
// stream makes it): the write never reaches the admin's receiver's.
func TestScopedWriteIsNotMadeToARegistrationNotFoundBeforeIt(t *testing.T) {
	const stream = "tenant/42/new"
	t0 := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	writes := map[string]func(ctx context.Context, s store.Backend) error{
		"unregister": func(ctx context.Context, s store.Backend) error { return s.Unregister(ctx, stream, "audit") },
		"unpark":     func(ctx context.Context, s store.Backend) error { return s.Unpark(ctx, stream, "audit", t0) },
		"pause":      func(ctx context.Context, s store.Backend) error { return s.Pause(ctx, stream, "audit", t0, "t", "") },
		"resume":     func(ctx context.Context, s store.Backend) error { return s.Resume(ctx, stream, "audit", t0, "t") },
		"resend": func(ctx context.Context, s store.Backend) error {
			_, err := s.Resend(ctx, stream, "audit", 1, t0, "t")
			return err
		},
		"skip":   func(ctx context.Context, s store.Backend) error { return s.Skip(ctx, stream, "audit", 2, t0, "t") },
		"rewind": func(ctx context.Context, s store.Backend) error { return s.Rewind(ctx, stream, "audit", 1, t0) },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			m := &materialisedAfterGet{Store: memory.New()}
			_, err := m.Subscribe(ctx, store.Subscription{Prefix: "tenant/", ID: "audit", Namespace: "webhook", URL: "https://audit.example/"}, store.Subscription{})
			require.NoError(t, err)
			tenant := operator.Scoped(m, store.Token{ID: "t", Role: store.RoleOperator, Scope: []string{"tenant/42/"}})
			m.then = func() {
				_, err := tenant.Append(ctx, stream, journal.Entry{ID: "first", Kind: "k", Payload: []byte(`{}`)})
				require.NoError(t, err)
			}
			require.ErrorIs(t, write(ctx, tenant), journal.ErrNotFound)
			st, err := m.Get(ctx, stream, "audit")
			require.NoError(t, err, "the subscription's registration was made")
			require.Equal(t, "tenant/", st.Subscription)
			require.False(t, st.Paused || st.NextSeq != 1, "and left as made: %+v", st)
		})
	}
}

// TestScopedCreateCannotTakeTheIDOfASubscriptionBeyondItsScope: through
// Register and Update alike, a token scoped to tenant/42/ may not create
// registration audit on its stream, where the admin's subscription of
// tenant/ with id audit matches but has no registration (ErrForbidden,
// nothing made); it creates one of another id, and audit on a stream that
// subscription does not match.
func TestScopedCreateCannotTakeTheIDOfASubscriptionBeyondItsScope(t *testing.T) {
	writes := map[string]func(ctx context.Context, s store.Backend, r store.Registration) error{
		"register": func(ctx context.Context, s store.Backend, r store.Registration) error {
			_, err := s.Register(ctx, r)
			return err
		},
		"update": func(ctx context.Context, s store.Backend, r store.Registration) error {
			_, err := s.Update(ctx, r, store.Registration{})
			return err
		},
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			m := memory.New()
			_, err := m.Append(ctx, "tenant/42/a", journal.Entry{ID: "a1", Kind: "k", Payload: []byte(`{}`)})
			require.NoError(t, err)
			_, err = m.Subscribe(ctx, store.Subscription{Prefix: "tenant/", ID: "audit", Namespace: "webhook", URL: "https://audit.example/"}, store.Subscription{})
			require.NoError(t, err)
			require.NoError(t, m.Unregister(ctx, "tenant/42/a", "audit"))
			tenant := operator.Scoped(m, store.Token{ID: "t", Role: store.RoleOperator, Scope: []string{"tenant/42/", "other/"}})
			reg := func(stream, id string) store.Registration {
				return push.Registration{Stream: stream, ID: id, Namespace: "webhook", URL: "https://tenant.example/"}
			}

			err = write(ctx, tenant, reg("tenant/42/a", "audit"))
			require.ErrorIs(t, err, operator.ErrForbidden)
			require.ErrorContains(t, err, "subscription stream_prefix=tenant/ id=audit")
			_, err = m.Get(ctx, "tenant/42/a", "audit")
			require.ErrorIs(t, err, journal.ErrNotFound, "nothing made")

			require.NoError(t, write(ctx, tenant, reg("tenant/42/a", "mine")))
			require.NoError(t, write(ctx, tenant, reg("other/a", "audit")))
		})
	}
}
