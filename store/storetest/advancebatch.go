package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// advanceBatchTests run against stores that are push.AdvanceBatchers; the
// others skip them (a worker gives them one Advance a save).
var advanceBatchTests = []test{
	{"EachSaveAsAdvanceAlone", testAdvanceBatchPerSave},
	{"RacingBatchesNeverMoveCursorsBack", testAdvanceBatchRace},
}

func batcher(t *testing.T, b Backend) push.AdvanceBatcher {
	t.Helper()
	ab, ok := b.(push.AdvanceBatcher)
	if !ok {
		t.Skip("the store does not batch Advance")
	}
	return ab
}

// testAdvanceBatchPerSave mixes, in one batch, every answer Advance can
// give: each save applies or fails exactly as it would alone.
func testAdvanceBatchPerSave(t *testing.T, b Backend) {
	ab := batcher(t, b)
	appendN(t, b, "s", 10)
	appendN(t, b, "t", 3)
	for _, id := range []string{"moves", "stale", "past", "behind", "attempts"} {
		register(t, b, reg("s", id, "webhook"))
	}
	register(t, b, reg("t", "end", "webhook"))

	moves := claim(t, b, "s", "moves", at(0))
	stale := claim(t, b, "s", "stale", at(0))
	live := claim(t, b, "s", "stale", at(61)) // stale's lease expired: another worker took it
	past := claim(t, b, "s", "past", at(0))
	require.NoError(t, b.Advance(ctx(t), claim(t, b, "s", "behind", at(0)), 6))
	behind := claim(t, b, "s", "behind", at(1))
	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "attempts", at(0)), 2, at(5), push.Evidence{At: at(0), Error: "503"}))
	attempts := claim(t, b, "s", "attempts", at(5))
	end := claim(t, b, "t", "end", at(0))

	type row struct {
		save push.CursorSave
		want error // nil: applied
		why  string
	}
	cases := []row{
		{push.CursorSave{Claim: moves, NextSeq: 5}, nil, "moves"},
		{push.CursorSave{Claim: stale, NextSeq: 9}, push.ErrLeaseLost, "a stale claim"},
		{push.CursorSave{Claim: past, NextSeq: 12}, journal.ErrInvalid, "a cursor above head+1"},
		{push.CursorSave{Claim: behind, NextSeq: 3}, nil, "an advance behind the cursor is not an error"},
		{push.CursorSave{Claim: push.Claim{Stream: "s", ID: "nobody", Owner: "x"}, NextSeq: 2}, journal.ErrNotFound, "nobody"},
		{push.CursorSave{Claim: push.Claim{Stream: "s", ID: "moves"}, NextSeq: 2}, journal.ErrInvalid, "no owner"},
		{push.CursorSave{Claim: attempts, NextSeq: 3}, nil, "attempts"},
		{push.CursorSave{Claim: end, NextSeq: 4}, nil, "to the end of the stream"},
		{push.CursorSave{Claim: past, NextSeq: 0}, journal.ErrInvalid, "cursor 0"},
	}
	errs, err := ab.AdvanceBatch(ctx(t), mapped(cases, func(c row) push.CursorSave { return c.save }))
	require.NoError(t, err)
	require.Len(t, errs, len(cases))
	for i, c := range cases {
		require.ErrorIs(t, errs[i], c.want, c.why)
	}

	regIs(t, b, "s", "moves", 5, 0, "", "the lease is released")
	regIs(t, b, "s", "stale", 1, 0, live.Owner, "a fenced save changes nothing and leaves the live lease")
	regIs(t, b, "s", "past", 1, 0, past.Owner, "a refused cursor changes nothing; the lease is still held")
	regIs(t, b, "s", "behind", 6, 0, "", "a cursor never moves back")
	require.Empty(t, regIs(t, b, "s", "attempts", 3, 0, "", "a save that moves the cursor resets attempts").LastError)
	regIs(t, b, "t", "end", 4, 0, "", "to the end")

	errs, err = ab.AdvanceBatch(ctx(t), nil)
	require.NoError(t, err)
	require.Empty(t, errs, "an empty batch")

	// The same registration twice (a turn fenced out beside the live one).
	c := claim(t, b, "s", "moves", at(100))
	errs, err = ab.AdvanceBatch(ctx(t), []push.CursorSave{{Claim: stale, NextSeq: 10}, {Claim: live, NextSeq: 7}, {Claim: c, NextSeq: 8}})
	require.NoError(t, err)
	require.ErrorIs(t, errs[0], push.ErrLeaseLost)
	require.NoError(t, errs[1])
	require.NoError(t, errs[2])
	require.Equal(t, uint64(7), get(t, b, "s", "stale").NextSeq)
	require.Equal(t, uint64(8), get(t, b, "s", "moves").NextSeq)
}

// testAdvanceBatchRace races workers that claim and save batches of the
// same registrations with short leases, in different orders: every save is
// applied (never moving a cursor back) or fenced out, and no two batches
// deadlock.
func testAdvanceBatchRace(t *testing.T, b Backend) {
	ab := batcher(t, b)
	const regs = 12
	streamWithRegs(t, b, 200, regs)
	var (
		mu      sync.Mutex
		maxSeen = map[string]uint64{}
	)
	race(t, 6, func(w int) error {
		rng := rand.New(rand.NewPCG(uint64(w), 7))
		for i := range 15 {
			when := at(i*10 + w)
			batch, err := b.Due(ctx(t), push.DueQuery{At: when, Limit: 6, Namespace: "webhook",
				Owner: fmt.Sprintf("w%d-%d", w, i), LeaseUntil: when.Add(time.Second)})
			if err != nil {
				return err
			}
			saves := make([]push.CursorSave, len(batch.Registrations))
			for j, st := range batch.Registrations {
				saves[j] = push.CursorSave{Claim: st.Claim(), NextSeq: 1 + rng.Uint64N(201)}
			}
			rng.Shuffle(len(saves), func(a, c int) { saves[a], saves[c] = saves[c], saves[a] })
			res, err := ab.AdvanceBatch(ctx(t), saves)
			if err != nil {
				return err
			}
			for j, e := range res {
				if errors.Is(e, push.ErrLeaseLost) {
					continue
				}
				if e != nil {
					return e
				}
				mu.Lock()
				maxSeen[saves[j].Claim.ID] = max(maxSeen[saves[j].Claim.ID], saves[j].NextSeq)
				mu.Unlock()
			}
		}
		return nil
	})
	require.NotEmpty(t, maxSeen)
	for id, n := range maxSeen {
		require.Equal(t, n, get(t, b, "s", id).NextSeq, "%s: the cursor is the largest applied save", id)
	}
}
