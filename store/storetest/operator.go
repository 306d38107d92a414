package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// An operator's moves of a cursor: skip and rewind.
var operatorTests = []test{
	{"SkipMovesPastPoison", testSkip},
	{"RewindReplays", testRewind},
	{"OperatorMovesAreDueAtOnce", testDueAtOnce},
}

func testSkip(t *testing.T, b Backend) {
	streamWithReg(t, b, 5)
	require.NoError(t, b.Park(ctx(t), claim(t, b, "s", "r", at(0)), 2, push.Evidence{At: at(0), Error: "400 Bad Request"}))
	for _, bad := range []uint64{0, 1, 2, 7, 1 << 62} {
		require.ErrorIs(t, b.Skip(ctx(t), "s", "r", bad, at(1), "poison"), journal.ErrInvalid, "skip to %d", bad)
	}
	require.Equal(t, uint64(2), get(t, b, "s", "r").NextSeq, "a refused skip changes nothing")

	require.NoError(t, b.Skip(ctx(t), "s", "r", 3, at(2), "record 2 is malformed"))
	require.True(t, regIs(t, b, "s", "r", 3, 0, "", "the skip").Parked, "a skip does not unpark")
	require.NoError(t, b.Skip(ctx(t), "s", "r", 6, at(3), "to the head"), "one past the head is allowed")

	evs := evidence(t, b, "s", "r")
	require.Equal(t, []string{push.EventSkip, push.EventSkip, ""}, events(evs))
	require.Equal(t, uint64(2), evs[1].Seq, "the evidence names the cursor skipped from")
	require.Equal(t, "record 2 is malformed", evs[1].Error)
	requireTime(t, at(2), evs[1].At, "skip evidence At")
}

func testRewind(t *testing.T, b Backend) {
	streamWithReg(t, b, 5)
	require.NoError(t, b.Advance(ctx(t), claim(t, b, "s", "r", at(0)), 6))
	require.Empty(t, due(t, b, "webhook", "w", at(0), 10).Registrations)
	for _, bad := range []uint64{0, 7, 1 << 62} {
		require.ErrorIs(t, b.Rewind(ctx(t), "s", "r", bad, at(1)), journal.ErrInvalid, "rewind to %d", bad)
	}
	require.Equal(t, uint64(6), get(t, b, "s", "r").NextSeq)

	require.NoError(t, b.Rewind(ctx(t), "s", "r", 2, at(10)))
	st := get(t, b, "s", "r")
	require.Equal(t, uint64(2), st.NextSeq, "rewind is the one way a cursor moves back")
	require.Equal(t, uint64(4), st.Lag())
	require.Equal(t, []string{"s/r"}, keys(due(t, b, "webhook", "w", at(10), 10).Registrations), "due at once")

	evs := evidence(t, b, "s", "r")
	require.Equal(t, []string{push.EventRewind}, events(evs))
	require.Equal(t, uint64(6), evs[0].Seq, "the evidence names the cursor rewound from")
	require.Equal(t, "rewound from #6 to #2", evs[0].Error, "and where to")

	err := b.Rewind(ctx(t), "s", "r", 3, at(11))
	require.ErrorIs(t, err, journal.ErrInvalid, "a rewind never moves the cursor forward")
	require.ErrorContains(t, err, "skip")
	require.Equal(t, uint64(2), get(t, b, "s", "r").NextSeq, "a refused rewind changed nothing")
	require.NoError(t, b.Rewind(ctx(t), "s", "r", 2, at(12)), "a rewind to the cursor retries it at once")
}

func testDueAtOnce(t *testing.T, b Backend) {
	streamWithReg(t, b, 5)
	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "r", at(0)), 1, at(100000), fail503(at(0))))
	require.NoError(t, b.Park(ctx(t), claim(t, b, "s", "r", at(100000)), 1, push.Evidence{At: at(100000), Error: "ceiling"}))
	require.NoError(t, b.Unpark(ctx(t), "s", "r", at(200000)))
	requireTime(t, at(200000), get(t, b, "s", "r").NextAttemptAt, "unpark: NextAttemptAt = at")

	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "r", at(200000)), 1, at(900000), fail503(at(200000))))
	require.NoError(t, b.Rewind(ctx(t), "s", "r", 1, at(200010)))
	require.Len(t, due(t, b, "webhook", "w1", at(200010), 1).Registrations, 1, "rewind: due at once, whatever NextAttemptAt was")

	require.NoError(t, b.Retry(ctx(t), claim(t, b, "s", "r", at(200100)), 1, at(900000), fail503(at(200100))))
	require.NoError(t, b.Skip(ctx(t), "s", "r", 2, at(200110), "poison"))
	require.Len(t, due(t, b, "webhook", "w2", at(200110), 1).Registrations, 1, "skip: due at once")
}
