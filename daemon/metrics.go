package daemon

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// metrics are the daemon's Prometheus metrics. Deliveries, turns and claims
// are counted as they happen (push.Hooks); the gauges are read when scraped
// (gauges), so they are never stale.
type metrics struct {
	reg        *prometheus.Registry
	deliveries *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	turns      *prometheus.CounterVec
	claims     *prometheus.CounterVec
	hostFails  prometheus.Counter
	gauges     *gauges
}

// newMetrics returns the metrics whose gauges read stats and hosts at
// scrape time.
func newMetrics(stats func(ctx context.Context) (store.Stats, error), hosts func(ctx context.Context) ([]store.Host, error)) *metrics {
	m := &metrics{
		reg:        prometheus.NewRegistry(),
		deliveries: counters("herald_deliveries_total", "Delivery attempts by namespace and outcome (accepted, transient, permanent, rejected).", "namespace", "outcome"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_turn_duration_seconds",
			Help:    "Wall-clock duration of one turn (one registration served once), in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}, []string{"namespace"}),
		turns: counters("herald_turns_total",
			"Turns by namespace and result (ok, attention: a registration parked, error: a store or journal error).", "namespace", "result"),
		claims: counters("herald_claims_total", "Claims of due registrations (Store.Due) by namespace and result (ok, error).", "namespace", "result"),
		hostFails: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_host_failures_total",
			Help: "Host-level failures (no connection, timeout, TLS, reset, 502/503/504 without Retry-After), counted by this process; herald_host_failures has them by host."}),
		gauges: &gauges{stats: stats, hosts: hosts},
	}
	m.reg.MustRegister(m.deliveries, m.duration, m.turns, m.claims, m.hostFails, m.gauges,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) hooks(ns string) push.Hooks {
	return push.Hooks{
		Attempt: func(a push.Attempt) { m.deliveries.WithLabelValues(ns, a.Outcome.Verdict.String()).Inc() },
		Turn: func(_ time.Time, r push.SweepReport, took time.Duration, err error) {
			m.duration.WithLabelValues(ns).Observe(took.Seconds())
			ok := "ok"
			if r.Parked > 0 { // a turn's backlog is the dispatcher's to claim again, not an operator's
				ok = "attention"
			}
			m.turns.WithLabelValues(ns, result(err, ok)).Inc()
		},
		HostFailure: func(store.Host) { m.hostFails.Inc() },
		Claim:       func(_ time.Time, _ int, err error) { m.claims.WithLabelValues(ns, result(err, "ok")).Inc() },
	}
}

func counters(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func gauge(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	turnsInFlightDesc    = gauge("herald_turns_in_flight", "Turns running now (registrations being served), by namespace; at most --max-in-flight plus --max-slow.", "namespace")
	slowTurnsDesc        = gauge("herald_slow_turns_in_flight", "Of herald_turns_in_flight, those whose message waited 1s for its answer and left --max-in-flight for --max-slow, by namespace.", "namespace")
	messagesInFlightDesc = gauge("herald_messages_in_flight", "Messages being sent now, by namespace.", "namespace")
	hostsAtCapDesc       = gauge("herald_hosts_at_cap", "Hosts with --max-per-host turns in flight, by namespace: claims take no more of them until one ends.", "namespace")
	registrationsDesc    = gauge("herald_registrations", "Registrations by namespace and state (ready, retrying, idle, parked); one held for its host counts as ready or retrying here, and in herald_held_registrations.", "namespace", "state")
	parkedDesc           = gauge("herald_parked_registrations", "Parked registrations by namespace: each needs an operator (herald unpark).", "namespace")
	behindDesc           = gauge("herald_records_behind", "Records appended but not yet acknowledged, summed over the namespace's registrations.", "namespace")
	hostsDesc            = gauge("herald_hosts", "Hosts herald keeps health for (those that ever failed for their host) by state (up, down, unavailable).", "state")
	heldDesc             = gauge("herald_held_registrations", "Registrations held because their host is down or unavailable.")
	statsUpDesc          = gauge("herald_store_up", "1 if the last scrape could read the store's stats, else 0.")
	hostFailuresDesc     = gauge("herald_host_failures",
		"Consecutive host-level failures of each host that is not up (down or unavailable), as stored for every daemon; a host has a series only while it is not up, at most 1,000 of them (by name; herald hosts lists all).", "host")
)

// maxHostSeries bounds herald_host_failures' series: a fan-out to a large
// audience may hold thousands of dead hosts, which herald hosts and the
// page list, and which a scrape need not carry.
const maxHostSeries = 1000

// gauges are read at scrape time: what is in flight from the workers
// (push.Worker.Load; per-host counts summed, not labelled, since a fan-out
// reaches more hosts than a metric should have series), registrations and
// hosts from the store. The one per-host series, herald_host_failures, is
// of the hosts not up as the store has them: a host that comes up, or whose
// row retention removes, has none at the next scrape, and this process
// keeps no per-host state.
type gauges struct {
	workers []*push.Worker
	stats   func(ctx context.Context) (store.Stats, error)
	hosts   func(ctx context.Context) ([]store.Host, error)
}

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{turnsInFlightDesc, slowTurnsDesc, messagesInFlightDesc, hostsAtCapDesc,
		registrationsDesc, parkedDesc, behindDesc, hostsDesc, heldDesc, statsUpDesc, hostFailuresDesc} {
		ch <- d
	}
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	set := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, w := range g.workers {
		l := w.Load()
		set(turnsInFlightDesc, float64(l.Turns), w.Namespace())
		set(slowTurnsDesc, float64(l.Slow), w.Namespace())
		set(messagesInFlightDesc, float64(l.Messages), w.Namespace())
		set(hostsAtCapDesc, float64(l.HostsAtCap), w.Namespace())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := g.stats(ctx)
	var hs []store.Host
	if err == nil {
		hs, err = g.hosts(ctx)
	}
	if err != nil {
		set(statsUpDesc, 0)
		return
	}
	sum := operator.SummarizeHosts(hs)
	for state, n := range map[string]int{store.HostUp: sum.Up, store.HostDown: sum.Down, store.HostUnavailable: sum.Unavailable} {
		set(hostsDesc, float64(n), state)
	}
	set(heldDesc, float64(sum.Held))
	series := 0
	for _, h := range hs {
		if h.State != store.HostUp && series < maxHostSeries {
			set(hostFailuresDesc, float64(h.Failures), h.Host)
			series++
		}
	}
	set(statsUpDesc, 1)
	for ns, n := range st.Namespaces {
		for state, v := range map[string]int{store.StateReady: n.Ready, store.StateRetrying: n.Retrying, store.StateIdle: n.Idle, store.StateParked: n.Parked, store.StatePaused: n.Paused} {
			set(registrationsDesc, float64(v), ns, state)
		}
		set(parkedDesc, float64(n.Parked), ns)
		set(behindDesc, float64(n.Behind), ns)
	}
}

// pruned registers the counters of what the daemon's pruner removes, and
// returns what adds a pass to them.
func (m *metrics) pruned() func(store.PruneReport, error) {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	records := c("herald_pruned_records_total", "Records pruned: past --retain, and acknowledged by every registration, followed by none, or held past a --retain-max.")
	bytes := c("herald_pruned_bytes_total", "Payload bytes of the records pruned.")
	streams := c("herald_pruned_streams_total", "Sealed streams whose registrations all completed, removed whole.")
	evidence := c("herald_pruned_evidence_total", "Evidence rows pruned (older than --retain, not a parked registration's reason).")
	hosts := c("herald_pruned_hosts_total", "Host rows pruned: no registration of the host, no failure for --retain.")
	passes := counters("herald_prune_passes_total", "Prune passes by result (ok, error).", "result")
	m.reg.MustRegister(records, bytes, streams, evidence, hosts, passes)
	return func(r store.PruneReport, err error) {
		passes.WithLabelValues(result(err, "ok")).Inc()
		records.Add(float64(r.Records))
		bytes.Add(float64(r.Bytes))
		streams.Add(float64(r.Removed))
		evidence.Add(float64(r.Evidence))
		hosts.Add(float64(r.Hosts))
	}
}

// result is a metric's result label: "error" for an error, else ok.
func result(err error, ok string) string {
	if err != nil {
		return "error"
	}
	return ok
}
