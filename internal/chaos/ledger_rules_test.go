package chaos

import (
	"context"
	"slices"
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
	v := l.Check(map[string]Expect{"a": {Head: 12}, "b": {Head: 12}}, 4)
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
		"N+1 before N":              {[]uint64{1, 3, 2}, 3, "#3 before #2 was ever acknowledged (N+1 before N, window 1)"},
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
			v := l.Check(map[string]Expect{"r": {Head: tc.head}}, 4)
			require.NotEmpty(t, v.Problems)
			require.Contains(t, strings.Join(v.Problems, "\n"), tc.want)
		})
	}
}

// turnAck is one acknowledgement with the turn that sent it; a kill comes
// before it when kill is set.
type turnAck struct {
	seq  uint64
	turn string
	kill bool
}

// ackTurns records the acknowledgements of a, in order.
func ackTurns(l *Ledger, reg string, as ...turnAck) {
	for _, a := range as {
		if a.kill {
			l.NextEpoch()
		}
		l.AckTurn(reg, a.seq, a.turn)
	}
}

// turnSeqs is seqs, all sent by turn.
func turnSeqs(turn string, seqs ...uint64) []turnAck {
	out := make([]turnAck, len(seqs))
	for i, s := range seqs {
		out[i] = turnAck{seq: s, turn: turn}
	}
	return out
}

func TestLedgerCheckAcceptsWindowsOutOfOrder(t *testing.T) {
	l := NewLedger()
	// Window 4, page 8: turn A acknowledges 1..8 out of order within the
	// window and saves; turn B sends 9..16 and dies with 13, 14 in flight
	// (lost) after 15 and 16 were acknowledged; turn C resumes at the saved
	// cursor 9, out of order again.
	as := slices.Concat(turnSeqs("A", 2, 1, 4, 3, 5, 7, 6, 8), turnSeqs("B", 9, 11, 10, 12, 15, 16))
	c := turnSeqs("C", 10, 9, 12, 11, 13, 14, 16, 15, 17, 18)
	c[0].kill = true
	ackTurns(l, "a", append(as, c...)...)
	v := l.Check(map[string]Expect{"a": {Head: 18, Window: 4}}, 8)
	require.Empty(t, v.Problems)
	require.Equal(t, []Restart{{Reg: "a", Index: 14, Epoch: 1, PrevTurn: "B", From: 9, Top: 16, Redelivered: 6}}, v.Restarts)
	require.Equal(t, 6, v.Duplicates)
	require.Equal(t, map[string]int{"a": 7}, v.Reordered, "2 before 1, 4 before 3, …: seven came after a higher seq of their turn")
}

func TestLedgerCheckRefusesWhatBreaksAWindow(t *testing.T) {
	for name, tc := range map[string]struct {
		acks []turnAck
		head uint64
		want string
	}{
		"N+W before N":           {turnSeqs("A", 1, 2, 6, 3, 4, 5), 6, "#6 before #3 was ever acknowledged (N+3 before N, window 3)"},
		"first beyond W":         {turnSeqs("A", 4, 1, 2, 3), 4, "#4 before #1"},
		"twice in one turn":      {turnSeqs("A", 1, 2, 3, 2, 4), 4, "#2 a second time in one turn's pass"},
		"behind past the window": {turnSeqs("A", 1, 2, 3, 4, 6, 7, 8, 9, 5), 9, "#5 after #9 in the same pass"},
		"a skipped record":       {slices.Concat(turnSeqs("A", 1, 2, 3, 4, 5, 6), turnSeqs("B", 1, 2, 4, 5, 6, 7, 8)), 8, "lacks #3"},
		"more than a page again": {slices.Concat(turnSeqs("A", seqRange(1, 10)...), turnSeqs("B", seqRange(2, 10)...)), 10, "more than one drain page"},
		"turns interleave":       {slices.Concat(turnSeqs("A", 1, 2), turnSeqs("B", 3), turnSeqs("A", 4)), 4, "whose pass had ended"},
		"a record never seen":    {turnSeqs("A", 1, 2, 3, 5), 5, "#4 was never acknowledged"},
	} {
		t.Run(name, func(t *testing.T) {
			l := NewLedger()
			ackTurns(l, "r", tc.acks...)
			v := l.Check(map[string]Expect{"r": {Head: tc.head, Window: 3}}, 4)
			require.NotEmpty(t, v.Problems)
			require.Contains(t, strings.Join(v.Problems, "\n"), tc.want)
		})
	}
}

func TestLedgerCheckWindowOneIsStrictOrder(t *testing.T) {
	// What window 3 lets through, window 1 refuses: out of order within a
	// turn is N+1 before N.
	l := NewLedger()
	ackTurns(l, "r", turnSeqs("A", 2, 1, 3)...)
	require.Empty(t, l.Check(map[string]Expect{"r": {Head: 3, Window: 3}}, 4).Problems)
	v := l.Check(map[string]Expect{"r": {Head: 3, Window: 1}}, 4)
	require.Contains(t, strings.Join(v.Problems, "\n"), "#2 before #1 was ever acknowledged (N+1 before N, window 1)")
	// A jump forward within a turn, though every seq was seen before.
	l = NewLedger()
	ackTurns(l, "r", slices.Concat(turnSeqs("A", 1, 2, 3, 4, 5), turnSeqs("B", 2, 4, 5))...)
	require.Contains(t, strings.Join(l.Check(map[string]Expect{"r": {Head: 5}}, 4).Problems, "\n"), "jumped from #2 to #4")
}

func TestLedgerCheckReportsUnknownRegistrationsAndProblems(t *testing.T) {
	l := NewLedger()
	l.Ack("ghost", 1)
	l.Problem("bad signature on %s", "x")
	v := l.Check(map[string]Expect{}, 4)
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

// TestAttributeAcknowledgedAfterTheKill is the case a short crash run hit
// (seed 1796158346641647967, crash/s0044 r1, window 16): kill 8 took a
// worker whose turn had written #21..#36 to the receiver; the receiver,
// behind on a loaded machine, read and acknowledged them after kill 8 and
// kill 9 were counted, and the turn that took the registration over sent
// them again. Counted so, kill 8 comes before the acknowledgement that
// precedes the re-delivery, and no kill explains it. As the harness counts
// now (killDrained: the kill's epoch begins once its process is stopped, the
// next kill only once the receiver served what the dead one sent), the
// dead worker's acknowledgements are of kill 8's epoch, and so is the
// re-delivery if it began before the receiver caught up: kill 8 explains
// it. A turn that goes back later with no kill since its previous
// acknowledgement is still unexplained.
func TestAttributeAcknowledgedAfterTheKill(t *testing.T) {
	dead := seqRange(21, 36) // the dead worker's turn, window 16: in any order
	dead[0], dead[15] = dead[15], dead[0]
	kills := make([]Kill, 10)
	for i := range kills {
		kills[i] = Kill{N: i + 1, PID: 100 + i, Orphans: map[string]bool{"a": i+1 == 8}}
	}
	type how int
	const (
		atOnce       how = iota // the harness before: the next kill while the receiver still reads
		drained                 // killDrained, the re-delivery after the receiver caught up
		drainedEarly            // killDrained, the re-delivery while the receiver catches up
		drainedTwice            // as drained, and a later turn goes back again with no kill
	)
	run := func(h how) []Restart {
		l := NewLedger()
		for s := uint64(1); s <= 20; s++ {
			l.AckTurn("a", s, "A")
		}
		for k := 1; k <= 7; k++ {
			l.NextEpoch()
		}
		l.NextEpoch() // 8: the worker sending dead is stopped
		switch h {
		case atOnce:
			for _, s := range dead[:11] {
				l.AckTurn("a", s, "B")
			}
			l.NextEpoch() // 9
			for _, s := range dead[11:] {
				l.AckTurn("a", s, "B")
			}
			l.NextEpoch() // 10
		case drainedEarly:
			for _, s := range dead {
				l.AckTurn("a", s, "B")
			}
			for s := uint64(21); s <= 24; s++ { // the lease was near its end: taken over at once
				l.AckTurn("a", s, "C")
			}
			l.NextEpoch() // 9
			l.NextEpoch() // 10
		default:
			for _, s := range dead {
				l.AckTurn("a", s, "B")
			}
			l.NextEpoch() // 9
			l.NextEpoch() // 10
		}
		for s := uint64(21); s <= 40; s++ {
			if h != drainedEarly || s > 24 {
				l.AckTurn("a", s, "C")
			}
		}
		if h == drainedTwice {
			for s := uint64(35); s <= 40; s++ {
				l.AckTurn("a", s, "D")
			}
		}
		v := l.Check(map[string]Expect{"a": {Head: 40, Window: 16}}, 16)
		require.Empty(t, v.Problems)
		return v.Restarts
	}

	rs := run(atOnce)
	require.Equal(t, []Restart{{Reg: "a", Index: 36, Epoch: 10, PrevEpoch: 9, PrevTurn: "B", From: 21, Top: 36, Redelivered: 16}}, rs)
	_, _, unexplained, _ := Attribute(rs, kills, 16)
	require.Equal(t, rs, unexplained, "the acknowledgements that raced kill 8's bookkeeping hide it")

	for _, h := range []how{drained, drainedEarly} {
		rs = run(h)
		require.Len(t, rs, 1)
		require.Equal(t, 8, rs[0].PrevEpoch)
		per, _, unexplained, overflow := Attribute(rs, kills, 16)
		require.Empty(t, unexplained, h)
		require.Empty(t, overflow, h)
		require.Equal(t, 16, per[7], "kill 8 explains the 16 re-deliveries")
	}

	rs = run(drainedTwice)
	require.Len(t, rs, 2)
	_, _, unexplained, _ = Attribute(rs, kills, 16)
	require.Equal(t, []Restart{{Reg: "a", Index: 56, Epoch: 10, PrevEpoch: 10, PrevTurn: "C", From: 35, Top: 40, Redelivered: 6}}, unexplained,
		"a turn that went back with no kill since its previous acknowledgement")
}

// TestAfterLostLeases: a turn fenced out because its lease expired while
// it ran (seen under load: crash/s0059 r1's turn sent #21..#36 in 4 s on a
// 3 s lease, and the worker that claimed it next sent them again) explains
// the re-delivery right after it, and only that one: a later pass of the
// same registration that goes back again, with no kill and no lost lease
// before it, is still unexplained.
func TestAfterLostLeases(t *testing.T) {
	l := NewLedger()
	ackTurns(l, "a", turnSeqs("100", seqRange(1, 20)...)...)
	ackTurns(l, "a", turnSeqs("104", seqRange(21, 36)...)...) // fenced out
	ackTurns(l, "a", turnSeqs("108", seqRange(21, 40)...)...) // took it over
	ackTurns(l, "a", turnSeqs("112", seqRange(38, 40)...)...) // went back on its own
	ackTurns(l, "b", turnSeqs("104", seqRange(1, 8)...)...)
	ackTurns(l, "b", turnSeqs("108", seqRange(5, 8)...)...) // b's own turn 104 kept its lease
	v := l.Check(map[string]Expect{"a": {Head: 40, Window: 16}, "b": {Head: 8, Window: 16}}, 16)
	require.Empty(t, v.Problems)
	require.Len(t, v.Restarts, 3)
	others, after := AfterLostLeases(v.Restarts, map[string]map[string]bool{"a": {"104": true}})
	require.Equal(t, []Restart{v.Restarts[0]}, after)
	require.Equal(t, "104", after[0].PrevTurn)
	require.Equal(t, []Restart{v.Restarts[1], v.Restarts[2]}, others)
	_, _, unexplained, _ := Attribute(others, nil, 16)
	require.Equal(t, others, unexplained, "no kill, no lost lease: unexplained")
}

func TestLedgerRecordsTheEpochsAroundARestart(t *testing.T) {
	l := NewLedger()
	ackAll(l, "a", []uint64{1, 2, 3, 2, 3}, 3)
	v := l.Check(map[string]Expect{"a": {Head: 3}}, 4)
	require.Empty(t, v.Problems)
	require.Equal(t, []Restart{{Reg: "a", Index: 3, Epoch: 1, PrevEpoch: 0, From: 2, Top: 3, Redelivered: 2}}, v.Restarts)
}

func TestLedgerOneRestartAcrossTheTurnsThatReplayIt(t *testing.T) {
	// Turn A sends 1..16 and dies before its cursor write; turn B replays
	// 1..3 and saves 4 (its budget spent); turn C goes on from 4 past the
	// top. One restart, explained by the kill between A and B.
	l := NewLedger()
	replayed := turnSeqs("B", seqRange(1, 3)...)
	replayed[0].kill = true
	ackTurns(l, "a", slices.Concat(turnSeqs("A", seqRange(1, 16)...), replayed, turnSeqs("C", seqRange(4, 20)...))...)
	v := l.Check(map[string]Expect{"a": {Head: 20}}, 16)
	require.Empty(t, v.Problems)
	require.Equal(t, []Restart{{Reg: "a", Index: 16, Epoch: 1, PrevEpoch: 0, PrevTurn: "A", From: 1, Top: 16, Redelivered: 16}}, v.Restarts)
	_, _, unexplained, _ := Attribute(v.Restarts, []Kill{{N: 1, Orphans: map[string]bool{"a": true}}}, 16)
	require.Empty(t, unexplained)

	// A turn that starts below where the replay before it stopped sends
	// records again on its own account: a restart of its own.
	l = NewLedger()
	replayed = turnSeqs("B", seqRange(1, 3)...)
	replayed[0].kill = true
	ackTurns(l, "a", slices.Concat(turnSeqs("A", seqRange(1, 16)...), replayed, turnSeqs("C", seqRange(2, 20)...))...)
	v = l.Check(map[string]Expect{"a": {Head: 20}}, 16)
	require.Len(t, v.Restarts, 2)
	require.Equal(t, Restart{Reg: "a", Index: 19, Epoch: 1, PrevEpoch: 1, PrevTurn: "B", From: 2, Top: 16, Redelivered: 15}, v.Restarts[1])
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
