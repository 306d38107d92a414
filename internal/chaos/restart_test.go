package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldpush/herald/internal/pgtest"
)

// TestChaosPostgresRestart: while daemons deliver and appends go on, the
// harness restarts PostgreSQL (pg_ctl restart -m fast: every connection
// breaks). The daemons keep running (the same processes from start to
// end), log the outage and its end, and resume by themselves; appends that
// failed during the outage are repeated, as the error message says is safe.
// Afterwards, against the receivers' ledger: every record acknowledged, in
// order, re-deliveries only after a restart and at most one drain page per
// registration; every cursor at its head and none ahead of its receiver.
func TestChaosPostgresRestart(t *testing.T) {
	if pgtest.Shared(t).External() {
		t.Fatal("this scenario restarts PostgreSQL: run it without " + pgtest.EnvURL)
	}
	ctx := context.Background()
	s := newScenario(t, pgtest.NewDatabase(t))
	s.dbUp = newGate()
	p := s.mode.Restart
	f := s.newFleet(ctx, p, "restart")
	t.Logf("%d workers, %d records in %d streams, %d registrations, %d database restarts", p.Workers, p.Records(), p.Streams, p.Registrations(), p.Restarts)
	for i := 0; i < p.Workers; i++ {
		f.startWorker(i)
	}
	pids := make([]int, p.Workers)
	for i, w := range f.workers {
		pids[i] = w.pid()
	}
	appended := make(chan error, 1)
	var appendFailures []result
	go func() {
		var err error
		appendFailures, err = s.appendRounds(ctx, f.streams, p.RecordsPerStream, p.Rounds)
		appended <- err
	}()

	var faults []Kill
	var outage, recovery time.Duration
	for r := 1; r <= p.Restarts; r++ {
		if err := f.ledger.WaitDistinct(ctx, p.Stall, r*p.Deliveries()/(p.Restarts+1)); err != nil {
			t.Fatalf("before restart %d: %v", r, err)
		}
		s.dbUp.shut()
		began := time.Now()
		pgtest.Restart(t)
		outage = max(outage, time.Since(began))
		faults = append(faults, Kill{N: f.ledger.NextEpoch()})
		s.dbUp.open()
		_, distinct, _ := f.ledger.Counts()
		back := time.Now()
		if err := f.ledger.WaitDistinct(ctx, p.Stall, distinct+1); err != nil {
			t.Fatalf("no delivery after restart %d: %v", r, err)
		}
		recovery = max(recovery, time.Since(back))
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if err := f.ledger.WaitDistinct(ctx, p.Stall, p.Deliveries()); err != nil {
		t.Fatalf("after the restarts: %v\n%s", err, s.cli.run("", "registrations", "--lagging", "--limit", "20").stdout)
	}
	for i, w := range f.workers {
		switch {
		case w.done() || w.pid() != pids[i] || f.started != p.Workers:
			t.Errorf("worker %d did not keep running through the restarts; log:\n%s", i, logTail(f.logs[i], 3000))
		case w.out.count("level=ERROR", "sweep failed") == 0 && w.out.count("cannot listen for appends") == 0:
			t.Errorf("worker %d logged nothing about the outage; log:\n%s", i, logTail(f.logs[i], 3000))
		case w.out.count("level=ERROR", "sweep failed") > 0 && w.out.count("sweeps recovered") == 0:
			t.Errorf("worker %d logged failed sweeps but not their recovery; log:\n%s", i, logTail(f.logs[i], 3000))
		}
	}
	f.stopAll()
	sweeps := f.settle()

	v := f.ledger.Check(f.heads(), p.DrainPage)
	for _, pr := range v.Problems {
		t.Error(pr)
	}
	_, _, unexplained := Attribute(v.Restarts, faults)
	for _, r := range unexplained {
		t.Errorf("%s went back from #%d to #%d (epoch %d) with no database restart since its previous delivery", r.Reg, r.Top, r.From, r.Epoch)
	}
	f.checkFinal()
	s.checkSecrets()
	failedSweeps, listenLost := 0, 0
	for _, w := range f.workers {
		failedSweeps += w.out.count("level=ERROR", "sweep failed")
		listenLost += w.out.count("cannot listen for appends")
	}
	t.Logf("append retries during the outages: %d; e.g. %s", len(appendFailures), firstResult(appendFailures))
	s.report(map[string]any{
		"workers": p.Workers, "records": p.Records(), "registrations": p.Registrations(), "restarts": p.Restarts,
		"outage_max_s": outage.Round(time.Millisecond).Seconds(), "first_delivery_after_restart_max_s": recovery.Round(time.Millisecond).Seconds(),
		"append_retries": len(appendFailures), "deliveries": v.Total, "duplicates": v.Duplicates, "passes": len(v.Restarts),
		"failed_sweep_logs": failedSweeps, "listen_lost_logs": listenLost, "settling_sweeps": sweeps,
	})
}

func firstResult(rs []result) string {
	if len(rs) == 0 {
		return "(none)"
	}
	return fmt.Sprintf("exit %d: %s", rs[0].code, cutString(rs[0].stderr, 300))
}
