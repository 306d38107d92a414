package memory_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend { return memory.New() })
}

// store.AllRegistrations reads past one page (MaxListLimit), every
// registration once, in List's order, with q's filters and After kept.
func TestAllRegistrationsPages(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	n := store.MaxListLimit + 2
	for i := range n {
		stream := "a"
		if i%2 == 1 {
			stream = "b"
		}
		_, err := s.Register(ctx, store.Registration{Stream: stream, ID: fmt.Sprintf("r%06d", i), Namespace: "webhook", URL: "https://h.example/"})
		require.NoError(t, err)
	}
	all, err := store.AllRegistrations(ctx, s, store.ListQuery{Limit: 3})
	require.NoError(t, err)
	require.Len(t, all, n)
	require.True(t, slices.IsSortedFunc(all, func(x, y store.Status) int {
		return cmp.Or(cmp.Compare(x.Stream, y.Stream), cmp.Compare(x.ID, y.ID))
	}))
	bs, err := store.AllRegistrations(ctx, s, store.ListQuery{Stream: "b", After: store.Key{Stream: "b", ID: "r000001"}})
	require.NoError(t, err)
	require.Len(t, bs, n/2-1, "b's registrations after its first")
	for _, st := range bs {
		require.Equal(t, "b", st.Stream)
	}
}
