package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Ledger is what the receivers saw: for each registration, every request
// (attempts) and the seqs they acknowledged with a 2xx, in the order the
// acknowledgements were given. It is the harness's ground truth: herald's
// own view (cursors, evidence) is checked against it. Safe for concurrent
// use.
type Ledger struct {
	mu       sync.Mutex
	regs     map[string]*regLog
	total    int // acknowledgements
	distinct int // distinct (registration, seq) acknowledged
	requests int // every request, acknowledged or not
	epoch    int // faults injected so far (kills, restarts)
	problems []string
	changed  chan struct{} // closed and replaced on every change
}

type regLog struct {
	acks       []ack
	seen       []bool // seen[s] for seq s
	contiguous uint64 // every seq 1..contiguous was acknowledged
	attempts   map[uint64]int
}

type ack struct {
	seq   uint64
	epoch int
	turn  string // the sending turn, as the request told it (webhook-timestamp); "" unknown
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{regs: map[string]*regLog{}, changed: make(chan struct{})}
}

func (l *Ledger) reg(name string) *regLog {
	r := l.regs[name]
	if r == nil {
		r = &regLog{attempts: map[uint64]int{}}
		l.regs[name] = r
	}
	return r
}

func (l *Ledger) signal() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Attempt records a request for seq of registration reg, whatever the
// answer will be.
func (l *Ledger) Attempt(reg string, seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reg(reg).attempts[seq]++
	l.requests++
	l.signal()
}

// Ack records that the receiver of reg acknowledged seq (answered 2xx).
func (l *Ledger) Ack(reg string, seq uint64) { l.AckTurn(reg, seq, "") }

// AckTurn is Ack for a request that says which turn sent it: every turn
// of a worker signs its messages with the instant of its claim (the
// webhook-timestamp), and two turns that could send the same seq are at
// least a lease apart, so the timestamp tells re-delivery passes apart
// even when a window lets them arrive out of order (see Check).
func (l *Ledger) AckTurn(reg string, seq uint64, turn string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.reg(reg)
	r.acks = append(r.acks, ack{seq: seq, epoch: l.epoch, turn: turn})
	l.total++
	if seq < 1<<32 { // a bogus seq is reported by Check, not allocated for
		if uint64(len(r.seen)) <= seq {
			r.seen = append(r.seen, make([]bool, int(seq)+1-len(r.seen))...)
		}
		if !r.seen[seq] {
			r.seen[seq] = true
			l.distinct++
			for r.contiguous+1 < uint64(len(r.seen)) && r.seen[r.contiguous+1] {
				r.contiguous++
			}
		}
	}
	l.signal()
}

// Problem records something a receiver found wrong with a request (a bad
// signature, an id that does not match the payload); Check reports it.
func (l *Ledger) Problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
	l.signal()
}

// Problems returns what the receivers found wrong with requests.
func (l *Ledger) Problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.problems)
}

// NextEpoch marks a fault injected (a kill, a database restart): the
// acknowledgements that follow carry the new epoch. It returns it.
func (l *Ledger) NextEpoch() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.epoch++
	return l.epoch
}

// Counts returns the acknowledgements, the distinct ones and the requests.
func (l *Ledger) Counts() (total, distinct, requests int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.distinct, l.requests
}

// Contiguous returns, for each registration, the largest k such that every
// seq 1..k was acknowledged.
func (l *Ledger) Contiguous() map[string]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]uint64, len(l.regs))
	for name, r := range l.regs {
		out[name] = r.contiguous
	}
	return out
}

// Acks returns the seqs reg's receiver acknowledged, in order.
func (l *Ledger) Acks(reg string) []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.regs[reg]
	if r == nil {
		return nil
	}
	out := make([]uint64, len(r.acks))
	for i, a := range r.acks {
		out[i] = a.seq
	}
	return out
}

// Around describes reg's acknowledgements from index-n to index+n, one a
// line with its seq, epoch and turn, for a failure's message.
func (l *Ledger) Around(reg string, index, n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	if r := l.regs[reg]; r != nil {
		for i := max(0, index-n); i < min(len(r.acks), index+n+1); i++ {
			a := r.acks[i]
			fmt.Fprintf(&b, "  acknowledgement %d: #%d, epoch %d, turn %s\n", i, a.seq, a.epoch, a.turn)
		}
	}
	return b.String()
}

// Attempts returns how many requests reg's receiver got for seq.
func (l *Ledger) Attempts(reg string, seq uint64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.regs[reg]; r != nil {
		return r.attempts[seq]
	}
	return 0
}

// Wait blocks until cond, called under the ledger's lock with the ledger,
// holds. It fails when ctx ends, or when the ledger has not changed for
// stall (the system stopped making progress), naming what it waited for.
// It waits on the ledger's changes, never on a clock, except to detect the
// stall.
func (l *Ledger) Wait(ctx context.Context, stall time.Duration, what string, cond func(*Ledger) bool) error {
	timer := time.NewTimer(stall)
	defer timer.Stop()
	for {
		l.mu.Lock()
		ok := cond(l)
		ch := l.changed
		total, distinct, requests := l.total, l.distinct, l.requests
		l.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
			if !timer.Stop() {
				<-timer.C
			}
			timer.Reset(stall)
		case <-timer.C:
			return fmt.Errorf("stalled: no request reached a receiver for %v while waiting for %s (%d acknowledgements, %d distinct, %d requests)", stall, what, total, distinct, requests)
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting for %s: %w (%d acknowledgements, %d distinct, %d requests)", what, ctx.Err(), total, distinct, requests)
		}
	}
}

// WaitDistinct waits until n distinct (registration, seq) pairs were
// acknowledged.
func (l *Ledger) WaitDistinct(ctx context.Context, stall time.Duration, n int) error {
	return l.Wait(ctx, stall, fmt.Sprintf("%d distinct deliveries", n), func(l *Ledger) bool { return l.distinct >= n })
}

// Restart is a re-delivery pass seen by one receiver: a turn whose
// acknowledgements (from Index on) included seqs acknowledged before, as
// after a worker died between its receiver's 2xx and its cursor write.
type Restart struct {
	Reg         string
	Index       int    // position of the pass's first acknowledgement
	Epoch       int    // faults injected before that one arrived
	PrevEpoch   int    // faults injected before the acknowledgement before it arrived
	PrevTurn    string // the turn of the acknowledgement before it ("" unknown)
	From        uint64 // the lowest seq of the pass
	Top         uint64 // the highest seq acknowledged before the pass
	Redelivered int    // acknowledgements of already-seen seqs in this pass
}

// Verdict is Check's finding.
type Verdict struct {
	Problems   []string
	Restarts   []Restart
	Total      int // acknowledgements
	Distinct   int
	Duplicates int // Total - Distinct
	// Reordered counts, per registration, the acknowledgements that came
	// after a higher seq of the same pass: what windows let receivers see.
	Reordered map[string]int
}

// Expect is what Check holds one registration's acknowledgements to.
type Expect struct {
	Head   uint64 // the seq of its stream's last record
	Window int    // its Registration.Window (0 means 1)
}

// Check judges the acknowledgements: for each registration in expect,
// with drainPage the workers' --drain-page. A pass is what one turn
// acknowledged: consecutive acknowledgements with the same turn (AckTurn),
// or, where the turn is unknown, a run that never goes back. With W the
// registration's window:
//
//  1. Never N+W before N: when seq s is acknowledged, every seq up to
//     s−W was acknowledged before (W = 1: s is at most one more than the
//     highest seen, and the first is 1). A turn starts N+W only after
//     its receiver's 2xx for N, which the ledger recorded before answering.
//  2. In seq order within the window: in a pass, no seq twice; none W or
//     more below the highest the pass acknowledged before it (the turn sent
//     that one only after everything W below it was answered); and every
//     seq from the pass's lowest to its highest − W acknowledged in it (a
//     turn skips nothing, and at most W requests were in flight when it
//     died). With W = 1 that is strict order: each seq the previous + 1,
//     a jump forward reported as such. Passes never interleave: a turn
//     whose pass ended acknowledges nothing more.
//  3. A pass re-delivers at most one drain page: every seq of it is at
//     least top − drainPage + 1, top the highest acknowledged before the
//     pass. A turn sends at most one page past the last cursor it saved
//     (its claim's, or the checkpoint before its current page; whatever its
//     window: the window never reaches past the page), and every seq
//     acknowledged before it was sent by turns that had saved that cursor
//     or one below it, so the repeats are at most that page.
//  4. Every seq 1..head was acknowledged at least once, and none beyond.
//
// A pass that acknowledged a seq seen before is a Restart; a pass that
// takes up such a pass's re-delivery where it stopped short of the top (the
// next seqs, within the window) belongs to the same Restart. Check also
// reports the problems the receivers recorded and registrations the
// receivers saw that expect does not name.
func (l *Ledger) Check(expect map[string]Expect, drainPage int) Verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := Verdict{Total: l.total, Distinct: l.distinct, Duplicates: l.total - l.distinct, Reordered: map[string]int{}}
	v.Problems = append(v.Problems, l.problems...)
	for _, name := range slices.Sorted(maps.Keys(l.regs)) {
		if _, ok := expect[name]; !ok {
			v.Problems = append(v.Problems, fmt.Sprintf("%s: the receiver got deliveries for a registration that does not exist", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(expect)) {
		var acks []ack
		if r := l.regs[name]; r != nil {
			acks = r.acks
		}
		rs, reordered, problems := checkAcks(name, acks, expect[name], drainPage)
		if reordered > 0 {
			v.Reordered[name] = reordered
		}
		v.Restarts = append(v.Restarts, rs...)
		v.Problems = append(v.Problems, problems...)
	}
	return v
}

// pass is one turn's acknowledgements, as checkAcks reads them.
type pass struct {
	start     int    // index of its first acknowledgement
	turn      string // "" when the requests did not say
	lo, hi    uint64 // its lowest and highest seq
	topBefore uint64 // the highest seq acknowledged before it
	seqs      map[uint64]bool
	restart   int // index in the restarts of this pass, -1 while it repeated nothing
}

// checkAcks applies Check's rules to one registration.
func checkAcks(name string, acks []ack, e Expect, drainPage int) (restarts []Restart, reordered int, problems []string) {
	var (
		w          = uint64(max(e.Window, 1))
		page       = uint64(drainPage)
		top        uint64 // highest seq acknowledged so far
		contiguous uint64 // every seq 1..contiguous acknowledged
		seen       = map[uint64]bool{}
		ended      = map[string]bool{} // turns whose pass ended
		cur        *pass
	)
	bad := func(format string, args ...any) {
		if len(problems) < 5 { // the first few say enough
			problems = append(problems, name+": "+fmt.Sprintf(format, args...))
		}
	}
	end := func() {
		if cur == nil {
			return
		}
		if cur.turn != "" {
			ended[cur.turn] = true
		}
		if w > 1 {
			for s := cur.lo; s+w <= cur.hi; s++ {
				if !cur.seqs[s] {
					bad("the pass of acknowledgement %d (#%d to #%d) lacks #%d, %d or more below its highest (window %d): a turn skipped a record", cur.start, cur.lo, cur.hi, s, w, w)
					break
				}
			}
		}
	}
	for i, a := range acks {
		s := a.seq
		if cur == nil || a.turn != cur.turn || (a.turn == "" && s <= acks[i-1].seq) {
			end()
			if a.turn != "" && ended[a.turn] {
				bad("acknowledgement %d (#%d) comes from turn %s, whose pass had ended: two turns at once (two workers?)", i, s, a.turn)
			}
			prev := cur
			cur = &pass{start: i, turn: a.turn, lo: s, hi: s, topBefore: top, seqs: map[uint64]bool{}, restart: -1}
			if prev != nil && prev.restart >= 0 && prev.hi < prev.topBefore && s > prev.hi && s <= prev.hi+w {
				// A re-delivery that one turn did not finish (its budget
				// ran out) goes on in the next turn, from the cursor the
				// first one saved: one restart, whose fault explains both.
				cur.restart = prev.restart
			}
		}
		switch {
		case s == 0:
			bad("acknowledgement %d is #0", i)
		case s > contiguous+w:
			bad("acknowledgement %d is #%d before #%d was ever acknowledged (N+%d before N, window %d)", i, s, contiguous+1, s-contiguous-1, w)
		}
		switch {
		case cur.seqs[s]:
			bad("acknowledgement %d is #%d a second time in one turn's pass (from acknowledgement %d): a turn sends a record once", i, s, cur.start)
		case s+w <= cur.hi:
			bad("acknowledgement %d is #%d after #%d in the same pass: %d or more behind, past the window (%d)", i, s, cur.hi, w, w)
		case w == 1 && i > cur.start && s > cur.hi+1:
			bad("acknowledgement %d jumped from #%d to #%d, skipping seqs of the pass under way: no saved cursor explains it (two workers at once?)", i, cur.hi, s)
		}
		if s+page <= cur.topBefore {
			bad("acknowledgement %d restarted at #%d after #%d: %d re-deliveries, more than one drain page (%d)", i, s, cur.topBefore, cur.topBefore-s+1, drainPage)
		}
		if s > e.Head {
			bad("acknowledgement %d is #%d, past the head #%d", i, s, e.Head)
		}
		if s < cur.hi {
			reordered++
		}
		cur.seqs[s] = true
		cur.lo, cur.hi = min(cur.lo, s), max(cur.hi, s)
		if seen[s] {
			if cur.restart < 0 {
				r := Restart{Reg: name, Index: cur.start, Epoch: acks[cur.start].epoch, From: s, Top: cur.topBefore}
				if cur.start > 0 {
					r.PrevEpoch, r.PrevTurn = acks[cur.start-1].epoch, acks[cur.start-1].turn
				}
				restarts = append(restarts, r)
				cur.restart = len(restarts) - 1
			}
			restarts[cur.restart].Redelivered++
		}
		if cur.restart >= 0 {
			restarts[cur.restart].From = min(restarts[cur.restart].From, cur.lo)
		}
		seen[s] = true
		top = max(top, s)
		for seen[contiguous+1] {
			contiguous++
		}
	}
	end()
	for s := uint64(1); s <= e.Head; s++ {
		if !seen[s] {
			bad("#%d was never acknowledged (%d acknowledgements, highest #%d, head #%d)", s, len(acks), top, e.Head)
			break
		}
	}
	return restarts, reordered, problems
}

// CheckCursors compares cursors (registration → next_seq, read from the
// database) with what the receivers acknowledged: a cursor may never pass
// a seq its receiver has not acknowledged. Read the cursors first and call
// CheckCursors after: acknowledgements only grow, so the comparison is
// sound while workers run.
func (l *Ledger) CheckCursors(cursors map[string]uint64) []string {
	acked := l.Contiguous()
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(cursors)) {
		next := cursors[name]
		if next > acked[name]+1 {
			problems = append(problems, fmt.Sprintf("%s: cursor %d is ahead of what its receiver acknowledged (every seq up to #%d)", name, next, acked[name]))
		}
	}
	return problems
}

// Kill is one injected fault and the registrations it left claimed by a
// dead worker (their leases still name it).
type Kill struct {
	N       int             // its epoch (1-based)
	PID     int             // the process killed (0 for a database restart)
	Orphans map[string]bool // registrations whose lease the dead process held
}

// AfterLostLeases splits restarts into those that came right after a turn
// whose lease was lost (lost: registration → the turns, as AckTurn names
// them, that a worker logged fenced out), and the others. A turn that
// outlived its lease had its registration claimed by another worker, which
// sent again what the fenced turn had not saved: a re-delivery without a
// crash, whose cause is the lost lease, not a kill.
func AfterLostLeases(restarts []Restart, lost map[string]map[string]bool) (others, after []Restart) {
	for _, r := range restarts {
		if r.PrevTurn != "" && lost[r.Reg][r.PrevTurn] {
			after = append(after, r)
		} else {
			others = append(others, r)
		}
	}
	return others, after
}

// Attribute assigns each restart to a fault that can explain it: one that
// came between the acknowledgement before the restart and the restart
// itself (both inclusive) and that orphaned the restart's registration
// (Orphans nil: any registration, as a database restart does). Inclusive:
// a dead worker's requests may be acknowledged after the harness counted
// its death (the receiver reads them from its socket buffers when it gets
// to them), and the worker that takes its registrations over may send
// again before the harness is done with the kill; so the crash scenario
// begins a kill's epoch once its process is stopped (it sends nothing
// more) and begins no other before the receiver served every request the
// dead process sent it (killDrained): its acknowledgements are all of its
// kill's epoch or an earlier one, and a re-delivery by another worker of
// its epoch or a later one. A fault explains at most capacity restarts: a killed
// worker has at most MaxInFlight turns in flight, and only those can have
// sent records it did not save.
//
// Which of several candidate faults made a restart cannot be read off the
// ledger: with a sweep limit above MaxInFlight a worker holds many claims
// it has not started, so a registration is often orphaned by several kills
// in a row without being in flight at all of them. Attribute therefore
// looks for an assignment that respects the capacity (a bipartite matching,
// by augmenting paths); only if none exists is the bound broken. It returns
// the re-deliveries and the registrations restarted per fault of that
// assignment (indexed by N-1), the restarts no fault can explain, and those
// that some fault could explain but only beyond its capacity.
func Attribute(restarts []Restart, kills []Kill, capacity int) (perKill, regsPerKill []int, unexplained, overflow []Restart) {
	perKill = make([]int, len(kills))
	regsPerKill = make([]int, len(kills))
	candidates := make([][]int, len(restarts))
	for i, r := range restarts {
		for k := range kills {
			n := kills[k].N
			if r.PrevEpoch <= n && n <= r.Epoch && (kills[k].Orphans == nil || kills[k].Orphans[r.Reg]) {
				candidates[i] = append(candidates[i], k)
			}
		}
	}
	assigned := make([][]int, len(kills)) // restarts assigned to each fault
	owner := make([]int, len(restarts))   // the fault a restart is assigned to, or -1
	for i := range owner {
		owner[i] = -1
	}
	var augment func(i int, seen []bool) bool
	augment = func(i int, seen []bool) bool {
		for _, k := range candidates[i] {
			if seen[k] {
				continue
			}
			seen[k] = true
			if len(assigned[k]) < capacity {
				assigned[k] = append(assigned[k], i)
				owner[i] = k
				return true
			}
			for j, other := range assigned[k] {
				if augment(other, seen) { // other moved to another fault: i takes its place
					assigned[k][j] = i
					owner[i] = k
					return true
				}
			}
		}
		return false
	}
	for i := range restarts {
		if len(candidates[i]) == 0 {
			unexplained = append(unexplained, restarts[i])
			continue
		}
		if !augment(i, make([]bool, len(kills))) {
			overflow = append(overflow, restarts[i])
		}
	}
	for i, k := range owner {
		if k >= 0 {
			perKill[k] += restarts[i].Redelivered
			regsPerKill[k]++
		}
	}
	return perKill, regsPerKill, unexplained, overflow
}
