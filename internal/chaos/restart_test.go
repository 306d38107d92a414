package chaos

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
	probe := s.newProbe(ctx)
	probe.deliver(1, "before any restart")
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
	// It listens again within listenRetry (1 s) of the database's return;
	// wait for it rather than look at once: the probe's append below is
	// numbered by the daemon's own sequencer, which wakes it without NOTIFY,
	// and could be delivered before the daemon's next LISTEN.
	if _, err := probe.daemon.out.waitLine(ctx, 30*time.Second, "listening for appends again"); err != nil || probe.daemon.out.count("cannot listen for appends") == 0 {
		t.Errorf("the probe daemon did not log losing LISTEN and getting it back (%v); log:\n%s", err, logTail(probe.log, 3000))
	}
	probe.deliver(2, "after the restarts")
	if err := f.ledger.WaitDistinct(ctx, p.Stall, p.Deliveries()); err != nil {
		t.Fatalf("after the restarts: %v\n%s", err, s.cli.run("", "registrations", "--lagging", "--limit", "20").stdout)
	}
	for i, w := range f.workers {
		switch {
		case w.done() || w.pid() != pids[i] || f.started != p.Workers:
			t.Errorf("worker %d did not keep running through the restarts; log:\n%s", i, logTail(f.logs[i], 3000))
		case w.out.count("level=ERROR", "store or journal error") == 0 && w.out.count("cannot listen for appends") == 0:
			t.Errorf("worker %d logged nothing about the outage; log:\n%s", i, logTail(f.logs[i], 3000))
		case w.out.count("level=ERROR", "store or journal error") > 0 && w.out.count("claims recovered") == 0:
			t.Errorf("worker %d logged failed claims but not their recovery; log:\n%s", i, logTail(f.logs[i], 3000))
		}
	}
	for i, w := range f.workers {
		for _, line := range strings.Split(w.out.text(), "\n") {
			if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") || strings.Contains(line, "recovered") {
				t.Logf("worker %d: %s", i, cutString(line, 400))
			}
		}
	}
	f.stopAll()
	probe.stop()
	sweeps := f.settle()

	v := f.ledger.Check(f.expect(), p.DrainPage)
	for _, pr := range v.Problems {
		t.Error(pr)
	}
	_, _, unexplained, _ := Attribute(v.Restarts, faults, len(v.Restarts)) // a restart may break any number of turns
	for _, r := range unexplained {
		t.Errorf("%s went back from #%d to #%d (epoch %d) with no database restart since its previous delivery", r.Reg, r.Top, r.From, r.Epoch)
	}
	f.checkFinal()
	s.checkSecrets()
	failedSweeps, listenLost := 0, 0
	for _, w := range f.workers {
		failedSweeps += w.out.count("level=ERROR", "store or journal error")
		listenLost += w.out.count("cannot listen for appends")
	}
	t.Logf("append retries during the outages: %d; e.g. %s", len(appendFailures), firstResult(appendFailures))
	s.report(map[string]any{
		"workers": p.Workers, "windows": f.windowFigures(v), "records": p.Records(), "registrations": p.Registrations(), "restarts": p.Restarts,
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

// probe is a daemon that sweeps every hour and so delivers only when
// LISTEN/NOTIFY wakes it: it proves the daemon listens for appends again
// after the database came back, without a restart of its own.
type probe struct {
	s      *scenario
	daemon *proc
	log    string
	acked  chan string // the CloudEvents ids its receiver acknowledged
}

const probeStream = "restart/probe"

func (s *scenario) newProbe(ctx context.Context) *probe {
	t := s.t
	pr := &probe{s: s, log: filepath.Join(s.dir, "probe.log"), acked: make(chan string, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		pr.acked <- r.Header.Get("ce-id")
	}))
	t.Cleanup(srv.Close)
	tokenFile := filepath.Join(s.dir, "probe-token")
	if err := os.WriteFile(tokenFile, []byte(s.token("probe-token-")), 0o600); err != nil {
		t.Fatal(err)
	}
	s.cli.ok("register", "--stream", probeStream, "--id", "probe", "--namespace", "cloudevents", "--url", srv.URL+"/probe",
		"--source", "https://chaos.example/probe", "--token", "file:"+tokenFile)
	pr.daemon = s.cli.start("probe", pr.log, "run", "--namespaces", "cloudevents", "--every", "1h",
		"--metrics-addr", "127.0.0.1:0", "--admin-addr", "", "--allow-http", "--allow-private-network")
	if _, err := pr.daemon.out.waitLine(ctx, time.Minute, "herald: running"); err != nil {
		t.Fatal(err)
	}
	return pr
}

// deliver appends the probe's record seq and waits for its receiver to
// acknowledge it: only a NOTIFY can have woken the daemon in time.
func (pr *probe) deliver(seq uint64, when string) {
	t := pr.s.t
	id := recordID(probeStream, seq)
	if r := pr.s.cli.run(`{"probe":true}`, "append", "--stream", probeStream, "--id", id, "--kind", "chaos.probe"); r.code != 0 {
		t.Fatalf("append the probe:\n%s", r)
	}
	select {
	case got := <-pr.acked:
		if got != id {
			t.Fatalf("the probe's receiver got %q, want %q", got, id)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s, a daemon that sweeps every hour did not deliver an append within 30 s: it no longer hears NOTIFY; log:\n%s",
			when, logTail(pr.log, 3000))
	}
}

func (pr *probe) stop() {
	if code, err := pr.daemon.stop(time.Minute); err != nil || code != 0 {
		pr.s.t.Errorf("the probe daemon on SIGTERM: exit %d, %v; log:\n%s", code, err, logTail(pr.log, 3000))
	}
}
