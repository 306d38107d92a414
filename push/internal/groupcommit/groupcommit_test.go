package groupcommit

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/heraldpush/herald/store"
	"github.com/stretchr/testify/require"
)

// batchingStore answers Advance and AdvanceBatch itself: a save of an odd
// cursor is fenced out, an even one applies. The first plain Advance
// waits for hold, so that the next saves gather behind it.
type batchingStore struct {
	store.Store               // nil: only the cursor calls are used
	entered     chan struct{} // closed when the first plain Advance began
	hold        chan struct{}

	mu      sync.Mutex
	batches []int // sizes, 1 for a plain Advance
	applied map[string]uint64
}

func (s *batchingStore) answer(c store.Claim, n uint64) error {
	if n%2 == 1 {
		return fmt.Errorf("advance %s: %w", c.ID, store.ErrLeaseLost)
	}
	s.applied[c.ID] = n
	return nil
}

func (s *batchingStore) Advance(_ context.Context, c store.Claim, n uint64) error {
	s.mu.Lock()
	first := len(s.batches) == 0
	s.batches = append(s.batches, 1)
	s.mu.Unlock()
	if first {
		close(s.entered)
		<-s.hold
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answer(c, n)
}

func (s *batchingStore) AdvanceBatch(_ context.Context, saves []store.CursorSave) ([]error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, len(saves))
	errs := make([]error, len(saves))
	for i, sv := range saves {
		errs[i] = s.answer(sv.Claim, sv.NextSeq)
	}
	return errs, nil
}

func TestSavesMadeWhileOneIsInFlightGoInOneBatch(t *testing.T) {
	bs := &batchingStore{entered: make(chan struct{}), hold: make(chan struct{}), applied: map[string]uint64{}}
	c := Wrap(bs).(*cursorStore)
	const n = 20
	gathered := make(chan struct{})
	c.queued = func(q int) {
		if q == n-1 {
			close(gathered) // all but the first, which is being saved, wait in the queue
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = c.Advance(t.Context(), store.Claim{Stream: "s", ID: "r0", Owner: "o"}, 1) })
	<-bs.entered // the first save is being saved: the others gather behind it
	for i := 1; i < n; i++ {
		wg.Go(func() {
			errs[i] = c.Advance(t.Context(), store.Claim{Stream: "s", ID: fmt.Sprint("r", i), Owner: "o"}, uint64(i+1))
		})
	}
	<-gathered
	close(bs.hold)
	wg.Wait()

	require.Equal(t, []int{1, n - 1}, bs.batches, "one alone, then every save that gathered meanwhile in one batch")
	for i, err := range errs {
		if (i+1)%2 == 1 {
			require.ErrorIs(t, err, store.ErrLeaseLost, "save %d gets its own answer", i)
		} else {
			require.NoError(t, err, "save %d", i)
			require.Equal(t, uint64(i+1), bs.applied[fmt.Sprint("r", i)])
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	require.False(t, c.saving, "the saver ends when nothing is queued")
}

func TestABatchOfSavesIsBounded(t *testing.T) {
	bs := &batchingStore{entered: make(chan struct{}), hold: make(chan struct{}), applied: map[string]uint64{}}
	c := Wrap(bs).(*cursorStore)
	const n = maxAdvanceBatch + 77
	gathered := make(chan struct{})
	c.queued = func(q int) {
		if q == n-1 {
			close(gathered)
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = c.Advance(t.Context(), store.Claim{Stream: "s", ID: "r0", Owner: "o"}, 2) })
	<-bs.entered
	for i := 1; i < n; i++ {
		wg.Go(func() {
			errs[i] = c.Advance(t.Context(), store.Claim{Stream: "s", ID: fmt.Sprint("r", i), Owner: "o"}, 2)
		})
	}
	<-gathered
	close(bs.hold)
	wg.Wait()
	require.Equal(t, []int{1, maxAdvanceBatch, n - 1 - maxAdvanceBatch}, bs.batches)
	for i, err := range errs {
		require.NoError(t, err, "save %d", i)
	}
	require.Len(t, bs.applied, n)
}
