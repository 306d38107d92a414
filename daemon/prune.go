package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/store"
)

// pruner is the daemon's retention: a pass of small batches every interval,
// with a pause between batches so appends and sweeps go first.
type pruner struct {
	log    *slog.Logger
	now    func() time.Time
	b      store.Retention
	retain time.Duration
	every  time.Duration
	// passed, if set, is called after every pass with its report.
	passed func(store.PruneReport, error)
}

// pruneBatchPause is the pause between two batches of one pass: short, but
// enough that a pass of thousands of batches never keeps the database busy.
const pruneBatchPause = 10 * time.Millisecond

func (p *pruner) run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		rep, err := p.pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			p.log.Error("herald: prune failed; trying again at the next interval", "err", err)
		case rep.Records > 0 || rep.Removed > 0 || rep.Evidence > 0:
			p.log.Info("herald: pruned", "records", rep.Records, "bytes", rep.Bytes, "streams", rep.Streams,
				"streams_removed", rep.Removed, "evidence", rep.Evidence)
		}
		if p.passed != nil {
			p.passed(rep, err)
		}
		timer.Reset(p.every)
	}
}

func (p *pruner) pass(ctx context.Context) (store.PruneReport, error) {
	return operator.Prune(ctx, p.b, store.PruneQuery{At: p.now(), Retain: p.retain}, func(int, store.PruneReport) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pruneBatchPause):
			return nil
		}
	})
}

// pruneMetrics count what the daemon's pruner removed.
type pruneMetrics struct {
	records, bytes, streams, evidence prometheus.Counter
	passes                            *prometheus.CounterVec
}

func newPruneMetrics(reg prometheus.Registerer) *pruneMetrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &pruneMetrics{
		records:  c("herald_pruned_records_total", "Records pruned: every registration had acknowledged them and they passed --retain."),
		bytes:    c("herald_pruned_bytes_total", "Payload bytes of the records pruned."),
		streams:  c("herald_pruned_streams_total", "Sealed streams whose registrations all completed, removed whole."),
		evidence: c("herald_pruned_evidence_total", "Evidence rows pruned (older than --retain, not a parked registration's reason)."),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_prune_passes_total",
			Help: "Prune passes by result (ok, error)."}, []string{"result"}),
	}
	reg.MustRegister(m.records, m.bytes, m.streams, m.evidence, m.passes)
	return m
}

func (m *pruneMetrics) observe(r store.PruneReport, err error) {
	if err != nil {
		m.passes.WithLabelValues("error").Inc()
	} else {
		m.passes.WithLabelValues("ok").Inc()
	}
	m.records.Add(float64(r.Records))
	m.bytes.Add(float64(r.Bytes))
	m.streams.Add(float64(r.Removed))
	m.evidence.Add(float64(r.Evidence))
}
