package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// TestDaemonsWithDefaultsDeliverEverythingThroughKills is the operator's
// trial: three `herald run` daemons on one machine and one PostgreSQL
// database, every flag at its default but --every 200ms, --allow-http and
// --allow-private-network (no address flags: all three want the default
// metrics and admin addresses), deliver 5 streams × 400 records to 10
// webhook registrations each (20,000 deliveries to one receiver host)
// while the harness SIGKILLs a random daemon 30 times and restarts it at
// once. Every delivery is made within 15 s of the last kill with no
// settling sweep, each registration's acknowledgements in order (window
// 1); every daemon runs (a default address another holds is left off with
// a warning); the receiver's host is never marked down (a killed daemon's
// connections are herald's own loss, not the receiver's failure).
func TestDaemonsWithDefaultsDeliverEverythingThroughKills(t *testing.T) {
	ctx := context.Background()
	s := newScenario(t, pgtest.NewDatabase(t))
	p := CrashPlan{Workers: 3, Streams: 5, RegsPerStream: 10, RecordsPerStream: 400, Rounds: 4, Kills: 30,
		DrainPage: push.DefaultDrainPage, Stall: 60 * time.Second}
	f := s.newFleet(ctx, p, "fleet")
	start := func(i int) {
		f.start(i, "daemon", "-v", "run", "--every", "200ms", "--allow-http", "--allow-private-network")
	}
	for i := range p.Workers {
		start(i)
	}
	appended := f.appendAll(ctx)
	points := f.killPoints()
	for k, point := range points {
		if err := f.ledger.WaitDistinct(ctx, p.Stall, point); err != nil {
			f.stalled(fmt.Errorf("before kill %d: %w", k+1, err))
		}
		slot := s.intN(p.Workers)
		if f.workers[slot].done() {
			t.Fatalf("daemon %d exited by itself before kill %d; log:\n%s", slot, k+1, logTail(f.logs[slot], 3000))
		}
		f.workers[slot].kill()
		start(slot)
	}
	lastKill := time.Now()
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	within, cancel := context.WithDeadline(ctx, lastKill.Add(15*time.Second))
	defer cancel()
	if err := f.ledger.WaitDistinct(within, p.Stall, p.Deliveries()); err != nil {
		f.stalled(fmt.Errorf("within 15 s of the last kill: %w", err))
	}
	took := time.Since(lastKill)

	v := f.ledger.Check(f.expect(), p.DrainPage)
	for _, pr := range v.Problems {
		t.Error(pr)
	}
	var hosts []store.Host
	s.cli.json(&hosts, "hosts")
	for _, h := range hosts {
		if h.Troubled() {
			t.Errorf("host %s is %s after %d failures: a killed daemon's connections were charged to the receiver", h.Host, h.State, h.Failures)
		}
	}
	f.stopAll()
	warnings, down := 0, 0
	for _, l := range f.logs {
		warnings += countLines(l, "is in use (another herald run on this machine?)")
		down += countLines(l, "herald: host-level failure")
	}
	if down > 0 {
		t.Errorf("daemons logged %d host-level failures; the one receiver never failed", down)
	}
	if warnings == 0 {
		t.Error("no daemon warned that a default address was taken, though three shared them")
	}
	f.checkFinal()
	s.report(map[string]any{
		"daemons":                   p.Workers,
		"kills":                     p.Kills,
		"daemon_starts":             f.started,
		"deliveries":                v.Total,
		"distinct":                  v.Distinct,
		"duplicates":                v.Duplicates,
		"passes":                    len(v.Restarts),
		"address_warnings":          warnings,
		"delivered_after_last_kill": took.Round(time.Millisecond).Seconds(),
	})
}
