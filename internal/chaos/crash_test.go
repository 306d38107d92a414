package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/push"
)

// TestChaosCrash: worker processes share one PostgreSQL database while the
// harness SIGKILLs a random one at random instants (after the receivers saw
// a random number of new deliveries) and restarts it, and appends go on.
// The registrations have windows 1, 4 and 16 in turn. Afterwards, against
// the receivers' ledger: every record reached its receiver at least once;
// per registration, record N+W never before N was acknowledged, each turn's
// seqs in order within its window, each re-delivery pass at most one drain
// page back (Ledger.Check); every re-delivery explained by a kill that left
// that registration claimed by the dead worker, at most one drain page per
// registration per kill (or by a turn fenced out, which fails on its own:
// no live worker's turn may outlive its lease); no cursor ever ahead of
// what its receiver acknowledged (checked after every kill, and at the
// end); nothing parked; no secret in any output.
func TestChaosCrash(t *testing.T) {
	ctx := context.Background()
	s := newScenario(t, pgtest.NewDatabase(t))
	p := s.mode.Crash
	f := s.newFleet(ctx, p, "crash")
	t.Logf("%d workers, %d records in %d streams, %d registrations (%d deliveries; windows %v in turn), %d kills, drain page %d, lease %v",
		p.Workers, p.Records(), p.Streams, p.Registrations(), p.Deliveries(), p.Windows, p.Kills, p.DrainPage, p.Lease)

	points := f.killPoints()
	for i := 0; i < p.Workers; i++ {
		f.startWorker(i)
	}
	appendCtx, stopAppends := context.WithCancel(ctx)
	defer stopAppends()
	appended := f.appendAll(appendCtx)

	var kills []Kill
	var cursorProblems []string
	var leasesRead, killTook time.Duration // the most a kill took to read the victim's leases, and in all
	for k, point := range points {
		if err := f.ledger.WaitDistinct(ctx, p.Stall, point); err != nil {
			f.stalled(fmt.Errorf("before kill %d: %w", k+1, err))
		}
		slot := s.intN(p.Workers)
		victim := f.workers[slot]
		// The kill's epoch begins once the victim is stopped (it sends
		// nothing more), and its leases are read at once, before one near
		// its end expires and is taken over; the next kill comes only
		// once the receiver served what the victim had sent (Attribute).
		var n int
		var orphans map[string]bool
		began := time.Now()
		err := f.killDrained(ctx, victim, func() (err error) {
			n = f.ledger.NextEpoch()
			orphans, err = f.leasedBy(ctx, victim.pid())
			leasesRead = max(leasesRead, time.Since(began))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		killTook = max(killTook, time.Since(began))
		cursors, err := f.cursors(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cursorProblems = append(cursorProblems, f.ledger.CheckCursors(cursors)...)
		kills = append(kills, Kill{N: n, PID: victim.pid(), Orphans: orphans})
		f.startWorker(slot)
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if err := f.ledger.WaitDistinct(ctx, p.Stall, p.Deliveries()); err != nil {
		f.stalled(fmt.Errorf("after the last kill: %w", err))
	}
	deliveredAt := time.Since(s.started)
	f.stopAll()
	sweeps := f.settle()

	for _, pr := range cursorProblems {
		t.Error("after a kill: " + pr)
	}
	v := f.ledger.Check(f.expect(), p.DrainPage)
	for _, pr := range v.Problems {
		t.Error(pr)
	}
	// A turn that outlived its lease (fenced out, below) explains the
	// re-delivery of the worker that took its registration over; the
	// others must be explained by kills.
	lost := f.lostLeases()
	byKills, afterLost := AfterLostLeases(v.Restarts, lost)
	perKill, regsPerKill, unexplained, overflow := Attribute(byKills, kills, push.DefaultMaxInFlight)
	for _, r := range unexplained {
		t.Errorf("%s went back from #%d to #%d (epoch %d) though no kill left it claimed: a re-delivery without a crash\n%s",
			r.Reg, r.Top, r.From, r.Epoch, f.explain(r, kills))
	}
	for _, r := range overflow {
		t.Errorf("%s went back from #%d to #%d (epochs %d to %d), but the kills in between cannot explain it with at most %d turns in flight each\n%s",
			r.Reg, r.Top, r.From, r.PrevEpoch, r.Epoch, push.DefaultMaxInFlight, f.explain(r, kills))
	}
	maxPerKill, maxRegsPerKill, maxPass, orphaned := 0, 0, 0, 0
	for i, d := range perKill {
		maxPerKill = max(maxPerKill, d)
		maxRegsPerKill = max(maxRegsPerKill, regsPerKill[i])
		orphaned += len(kills[i].Orphans)
		if bound := len(kills[i].Orphans) * p.DrainPage; d > bound {
			t.Errorf("kill %d left %d registrations claimed and caused %d re-deliveries, more than a drain page each (%d)", i+1, len(kills[i].Orphans), d, bound)
		}
	}
	for _, r := range v.Restarts {
		maxPass = max(maxPass, r.Redelivered)
	}
	f.checkFinal()
	fenced := 0
	for _, turns := range lost {
		fenced += len(turns)
	}
	if fenced > 0 {
		t.Errorf("%d turns of live workers were fenced out: their lease expired while they ran; %d re-delivery passes followed them", fenced, len(afterLost))
	}
	for i, l := range f.logs {
		if n := countLines(l, "level=ERROR"); n > 0 {
			t.Errorf("worker %d logged %d errors; a peer's death is no error of its own:\n%s", i, n, logTail(l, 3000))
		}
	}
	s.checkSecrets()

	mean := 0.0
	if len(kills) > 0 {
		mean = float64(v.Duplicates) / float64(len(kills))
	}
	s.report(map[string]any{
		"workers":                               p.Workers,
		"records":                               p.Records(),
		"registrations":                         p.Registrations(),
		"streams":                               p.Streams,
		"kills":                                 len(kills),
		"worker_starts":                         f.started,
		"drain_page":                            p.DrainPage,
		"lease_s":                               p.Lease.Seconds(),
		"max_in_flight":                         push.DefaultMaxInFlight,
		"deliveries":                            v.Total,
		"distinct":                              v.Distinct,
		"duplicates":                            v.Duplicates,
		"passes":                                len(v.Restarts),
		"duplicates_per_kill_max":               maxPerKill,
		"duplicates_per_kill_mean":              mean,
		"duplicates_per_pass_max":               maxPass,
		"registrations_sent_again_per_kill_max": maxRegsPerKill,
		"registrations_orphaned_per_kill_mean":  float64(orphaned) / float64(max(1, len(kills))),
		"settling_sweeps":                       sweeps,
		"max_per_host":                          p.MaxPerHost,
		"windows":                               f.windowFigures(v),
		"delivered_s":                           deliveredAt.Round(time.Millisecond).Seconds(),
		"kill_leases_read_s_max":                leasesRead.Round(time.Millisecond).Seconds(),
		"kill_drained_s_max":                    killTook.Round(time.Millisecond).Seconds(),
	})
}

// explain is the evidence of a restart Attribute could not explain: the
// registration's acknowledgements around it, the kills that left it
// claimed, and the workers' last log lines about it (-v logs every
// delivery attempt).
func (f *fleet) explain(r Restart, kills []Kill) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%+v\n%s", r, f.ledger.Around(r.Reg, r.Index, 24))
	for _, k := range kills {
		if k.Orphans[r.Reg] {
			fmt.Fprintf(&b, "  kill %d (pid %d) left it claimed\n", k.N, k.PID)
		}
	}
	stream, id, _ := strings.Cut(r.Reg, " ")
	for i, l := range f.logs {
		var lines []string
		for _, line := range strings.Split(logTail(l, 1<<30), "\n") {
			switch {
			case strings.HasPrefix(line, "=== "): // an incarnation's first line: its pid
				pid, _, _ := strings.Cut(line, ": herald")
				lines = append(lines, pid)
			case strings.Contains(line, "stream="+stream+" registration="+id+" "):
				lines = append(lines, cutString(line, 300))
			}
		}
		fmt.Fprintf(&b, "  worker %d's log about it (end):\n    %s\n", i, strings.Join(lines[max(0, len(lines)-40):], "\n    "))
	}
	return b.String()
}

// lostLeases reads the workers' logs for the turns fenced out ("lease
// lost"): registration (the ledger's name) → the turns, named as the
// receivers' ledger names them (the claim's instant, in Unix seconds: the
// webhook-timestamp).
func (f *fleet) lostLeases() map[string]map[string]bool {
	t := f.s.t
	lost := map[string]map[string]bool{}
	for _, l := range f.logs {
		for _, line := range strings.Split(logTail(l, 1<<30), "\n") {
			if !strings.Contains(line, "lease lost") {
				continue
			}
			m := lostLease.FindStringSubmatch(line)
			at, err := time.Time{}, error(nil)
			if m != nil {
				at, err = time.Parse(time.RFC3339Nano, m[3])
			}
			if m == nil || err != nil {
				t.Errorf("a worker's line about a lost lease does not say which turn: %s", cutString(line, 400))
				continue
			}
			reg := m[1] + " " + m[2]
			if lost[reg] == nil {
				lost[reg] = map[string]bool{}
			}
			lost[reg][strconv.FormatInt(at.Unix(), 10)] = true
		}
	}
	return lost
}

var lostLease = regexp.MustCompile(`stream=(\S+) registration=(\S+) .*claimed_at=(\S+)`)

// countLines counts the lines of a file that contain word.
func countLines(path, word string) int {
	n := 0
	for _, line := range strings.Split(logTail(path, 1<<30), "\n") {
		if strings.Contains(line, word) {
			n++
		}
	}
	return n
}

// TestLostLeasesReadsTheWorkersLines: lostLeases reads the turn of each
// "lease lost" line a worker logs (as slog's text handler writes it for
// push's turn.lost) as the ledger names turns: the claim's instant in Unix
// seconds, the webhook-timestamp.
func TestLostLeasesReadsTheWorkersLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "worker-0.log")
	file, err := os.Create(path)
	require.NoError(t, err)
	at := time.Date(2026, 12, 1, 21, 34, 35, 987654321, time.UTC)
	log := slog.New(slog.NewTextHandler(file, &slog.HandlerOptions{Level: slog.LevelDebug}))
	log.Info("herald: running")
	log.Debug("herald: lease lost; the turn's writes were fenced out", "stream", "crash/s0059", "registration", "r1",
		"owner", "vm/19241/f6090f96#54", "claimed_at", at, "err", errors.New("advance crash/s0059/r1 under the lease of vm/19241/f6090f96#54: lease lost"))
	require.NoError(t, file.Close())
	f := &fleet{s: &scenario{t: t}, logs: []string{path}}
	require.Equal(t, map[string]map[string]bool{"crash/s0059 r1": {strconv.FormatInt(at.Unix(), 10): true}}, f.lostLeases())
}
