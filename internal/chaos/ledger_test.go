package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ackAll records seqs for reg, moving to a new epoch before each index in
// kills.
func ackAll(l *Ledger, reg string, seqs []uint64, killsBefore ...int) {
	for i, s := range seqs {
		for _, k := range killsBefore {
			if k == i {
				l.NextEpoch()
			}
		}
		l.Ack(reg, s)
	}
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestLedgerCheckAcceptsRedeliveredTails(t *testing.T) {
	l := NewLedger()
	// 1..10, a crash after the cursor was saved at 7, the tail 7..10
	// again, then on to 12.
	seqs := append(seqRange(1, 10), seqRange(7, 12)...)
	ackAll(l, "a", seqs, 10)
	ackAll(l, "b", seqRange(1, 12))
	v := l.Check(map[string]uint64{"a": 12, "b": 12}, 4)
	require.Empty(t, v.Problems)
	require.Equal(t, []Restart{{Reg: "a", Index: 10, Epoch: 1, From: 7, Top: 10, Redelivered: 4}}, v.Restarts)
	require.Equal(t, 4, v.Duplicates)
	require.Equal(t, 24, v.Distinct)
}

func TestLedgerCheckRefusesWhatLosesOrReorders(t *testing.T) {
	for name, tc := range map[string]struct {
		seqs []uint64
		head uint64
		want string
	}{
		"N+1 before N":              {[]uint64{1, 3, 2}, 3, "#3 before #2 was ever seen"},
		"first is not 1":            {[]uint64{2, 3}, 3, "#2 before #1"},
		"a record never seen":       {[]uint64{1, 2}, 3, "#3 was never acknowledged"},
		"nothing at all":            {nil, 2, "#1 was never acknowledged"},
		"more than a page again":    {append(seqRange(1, 10), seqRange(2, 10)...), 10, "more than one drain page"},
		"jump within a second pass": {[]uint64{1, 2, 3, 4, 5, 2, 4, 5}, 5, "jumped from #2 to #4"},
		"past the head":             {[]uint64{1, 2, 3}, 2, "past the head"},
	} {
		t.Run(name, func(t *testing.T) {
			l := NewLedger()
			ackAll(l, "r", tc.seqs)
			v := l.Check(map[string]uint64{"r": tc.head}, 4)
			require.NotEmpty(t, v.Problems)
			require.Contains(t, strings.Join(v.Problems, "\n"), tc.want)
		})
	}
}

func TestLedgerCheckReportsUnknownRegistrationsAndProblems(t *testing.T) {
	l := NewLedger()
	l.Ack("ghost", 1)
	l.Problem("bad signature on %s", "x")
	v := l.Check(map[string]uint64{}, 4)
	require.Len(t, v.Problems, 2)
	require.Contains(t, v.Problems[0], "bad signature")
	require.Contains(t, v.Problems[1], "ghost")
}

func TestLedgerCheckCursors(t *testing.T) {
	l := NewLedger()
	ackAll(l, "a", []uint64{1, 2, 4})
	require.Empty(t, l.CheckCursors(map[string]uint64{"a": 3}), "cursor 3: #1 and #2 acknowledged")
	got := l.CheckCursors(map[string]uint64{"a": 4, "b": 2})
	require.Len(t, got, 2)
	require.Contains(t, got[0], "a: cursor 4 is ahead")
	require.Contains(t, got[1], "b: cursor 2 is ahead")
}

func TestAttribute(t *testing.T) {
	rs := []Restart{
		{Reg: "a", PrevEpoch: 0, Epoch: 1, Redelivered: 3},
		{Reg: "b", PrevEpoch: 1, Epoch: 2, Redelivered: 2},
		{Reg: "a", PrevEpoch: 1, Epoch: 3, Redelivered: 1}, // killed at 1, the epoch of its previous ack: inclusive
		{Reg: "c", PrevEpoch: 0, Epoch: 2, Redelivered: 5}, // no kill orphaned c
		{Reg: "b", PrevEpoch: 0, Epoch: 0, Redelivered: 1}, // before any kill
		{Reg: "a", PrevEpoch: 2, Epoch: 3, Redelivered: 1}, // a went back again, with no kill of its worker since its last ack
		{Reg: "d", PrevEpoch: 1, Epoch: 4, Redelivered: 2}, // orphaned at 2 and again at 4
	}
	kills := []Kill{{N: 1, Orphans: map[string]bool{"a": true}}, {N: 2, Orphans: map[string]bool{"b": true, "d": true}},
		{N: 3, Orphans: map[string]bool{}}, {N: 4, Orphans: map[string]bool{"d": true}}}
	per, regs, unexplained, overflow := Attribute(rs, kills, 16)
	require.Equal(t, 3+2+1+2, per[0]+per[1]+per[2]+per[3], "every explained restart is assigned once")
	require.Equal(t, 4, regs[0]+regs[1]+regs[2]+regs[3])
	require.Equal(t, 2, regs[0], "both restarts of a have kill 1 as their only candidate")
	require.Equal(t, []Restart{rs[3], rs[4], rs[5]}, unexplained)
	require.Empty(t, overflow)

	// With room for one restart a kill, a valid assignment moves d to kill 4,
	// and b takes kill 2; the second restart of a has nowhere to go.
	per, regs, _, overflow = Attribute(rs, kills, 1)
	require.Equal(t, []int{1, 1, 0, 1}, regs)
	require.Equal(t, []int{3, 2, 0, 2}, per)
	require.Equal(t, []Restart{rs[2]}, overflow, "kill 1 cannot explain two registrations going back with one turn in flight")
}

func TestLedgerRecordsTheEpochsAroundARestart(t *testing.T) {
	l := NewLedger()
	ackAll(l, "a", []uint64{1, 2, 3, 2, 3}, 3)
	v := l.Check(map[string]uint64{"a": 3}, 4)
	require.Empty(t, v.Problems)
	require.Equal(t, []Restart{{Reg: "a", Index: 3, Epoch: 1, PrevEpoch: 0, From: 2, Top: 3, Redelivered: 2}}, v.Restarts)
}

func TestLedgerWaitWakesOnChangeAndDetectsStalls(t *testing.T) {
	l := NewLedger()
	done := make(chan error, 1)
	go func() { done <- l.WaitDistinct(context.Background(), time.Minute, 2) }()
	l.Ack("a", 1)
	l.Ack("a", 1)
	l.Ack("a", 2)
	require.NoError(t, <-done)

	err := l.WaitDistinct(context.Background(), time.Millisecond, 3)
	require.ErrorContains(t, err, "stalled")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorContains(t, l.WaitDistinct(ctx, time.Minute, 3), "gave up")
}

func TestModeFromEnv(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	m, seed, err := modeFromEnv(get, func() int64 { return 7 })
	require.NoError(t, err)
	require.Equal(t, "short", m.Name)
	require.Equal(t, int64(7), seed)
	env[EnvMode], env[EnvSeed] = "long", "42"
	m, seed, err = modeFromEnv(get, func() int64 { return 7 })
	require.NoError(t, err)
	require.Equal(t, 100_000, m.Crash.Records())
	require.Equal(t, 1000, m.Crash.Registrations())
	require.GreaterOrEqual(t, m.Crash.Kills, 100)
	require.Equal(t, 4, m.Crash.Workers)
	require.Equal(t, int64(42), seed)
	env[EnvMode] = "medium"
	_, _, err = modeFromEnv(get, func() int64 { return 7 })
	require.ErrorContains(t, err, "short (the default) or long")
	env[EnvMode], env[EnvSeed] = "", "x"
	_, _, err = modeFromEnv(get, func() int64 { return 7 })
	require.ErrorContains(t, err, EnvSeed)
}
