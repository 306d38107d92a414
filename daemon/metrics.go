package daemon

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/push"
)

// metrics are the daemon's Prometheus metrics. Deliveries, turns and claims
// are counted as they happen (push.Hooks); what is in flight is read from
// the workers (push.Worker.Load) and registration gauges from the store's
// Stats when scraped, so they are never stale.
type metrics struct {
	reg        *prometheus.Registry
	deliveries *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	turns      *prometheus.CounterVec
	claims     *prometheus.CounterVec
	loads      *loadCollector
	hostFails  *prometheus.CounterVec
}

// newMetrics returns the metrics whose gauges read stats and hosts at
// scrape time.
func newMetrics(stats func(ctx context.Context) (push.Stats, error), hosts func(ctx context.Context) ([]push.Host, error)) *metrics {
	counters := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
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
		loads:  &loadCollector{},
		hostFails: counters("herald_host_failures_total",
			"Host-level failures (no connection, timeout, TLS, reset, 502/503/504 without Retry-After) by host (host:port), counted by this process.", "host"),
	}
	m.reg.MustRegister(m.deliveries, m.duration, m.turns, m.claims, m.loads, m.hostFails, &statsCollector{stats: stats, hosts: hosts},
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// handler serves the metrics in Prometheus' text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// hooks returns the worker hooks that feed the metrics for namespace ns.
func (m *metrics) hooks(ns string) push.Hooks {
	return push.Hooks{
		Attempt: func(a push.Attempt) { m.deliveries.WithLabelValues(ns, a.Outcome.Verdict.String()).Inc() },
		Turn: func(_ time.Time, r push.SweepReport, took time.Duration, err error) {
			m.duration.WithLabelValues(ns).Observe(took.Seconds())
			result := "ok"
			switch {
			case err != nil:
				result = "error"
			case r.Parked > 0: // a turn's backlog is the dispatcher's to claim again, not an operator's
				result = "attention"
			}
			m.turns.WithLabelValues(ns, result).Inc()
		},
		HostFailure: func(h push.Host) { m.hostFails.WithLabelValues(h.Host).Inc() },
		Claim: func(_ time.Time, _ int, err error) {
			result := "ok"
			if err != nil {
				result = "error"
			}
			m.claims.WithLabelValues(ns, result).Inc()
		},
	}
}

// watch adds a worker's load (turns, messages and hosts at the cap in
// flight) to the metrics.
func (m *metrics) watch(w *push.Worker) { m.loads.workers = append(m.loads.workers, w) }

var (
	turnsInFlightDesc = prometheus.NewDesc("herald_turns_in_flight",
		"Turns running now (registrations being served), by namespace; at most --max-in-flight.", []string{"namespace"}, nil)
	messagesInFlightDesc = prometheus.NewDesc("herald_messages_in_flight",
		"Messages being sent now, by namespace.", []string{"namespace"}, nil)
	hostsAtCapDesc = prometheus.NewDesc("herald_hosts_at_cap",
		"Hosts with --max-per-host turns in flight, by namespace: claims take no more of them until one ends.", []string{"namespace"}, nil)
)

// loadCollector reads the workers' loads at scrape time. Per-host counts
// are summed, not labelled: a fan-out reaches more hosts than a metric
// should have series.
type loadCollector struct{ workers []*push.Worker }

func (c *loadCollector) Describe(ch chan<- *prometheus.Desc) {
	describeAll(ch, turnsInFlightDesc, messagesInFlightDesc, hostsAtCapDesc)
}

func describeAll(ch chan<- *prometheus.Desc, descs ...*prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

func (c *loadCollector) Collect(ch chan<- prometheus.Metric) {
	for _, w := range c.workers {
		l := w.Load()
		ch <- prometheus.MustNewConstMetric(turnsInFlightDesc, prometheus.GaugeValue, float64(l.Turns), w.Namespace())
		ch <- prometheus.MustNewConstMetric(messagesInFlightDesc, prometheus.GaugeValue, float64(l.Messages), w.Namespace())
		ch <- prometheus.MustNewConstMetric(hostsAtCapDesc, prometheus.GaugeValue, float64(l.HostsAtCap), w.Namespace())
	}
}

var (
	registrationsDesc = prometheus.NewDesc("herald_registrations",
		"Registrations by namespace and state (ready, retrying, idle, parked); one held for its host counts as ready or retrying here, and in herald_held_registrations.", []string{"namespace", "state"}, nil)
	parkedDesc = prometheus.NewDesc("herald_parked_registrations",
		"Parked registrations by namespace: each needs an operator (herald unpark).", []string{"namespace"}, nil)
	behindDesc = prometheus.NewDesc("herald_records_behind",
		"Records appended but not yet acknowledged, summed over the namespace's registrations.", []string{"namespace"}, nil)
	hostsDesc = prometheus.NewDesc("herald_hosts",
		"Hosts herald keeps health for (those that ever failed for their host) by state (up, down, unavailable).", []string{"state"}, nil)
	heldDesc = prometheus.NewDesc("herald_held_registrations",
		"Registrations held because their host is down or unavailable.", nil, nil)
	statsUpDesc = prometheus.NewDesc("herald_store_up",
		"1 if the last scrape could read the store's stats, else 0.", nil, nil)
)

// statsCollector reads registration gauges from the store at scrape time.
type statsCollector struct {
	stats func(ctx context.Context) (push.Stats, error)
	hosts func(ctx context.Context) ([]push.Host, error)
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	describeAll(ch, registrationsDesc, parkedDesc, behindDesc, hostsDesc, heldDesc, statsUpDesc)
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.stats(ctx)
	var hs []push.Host
	if err == nil {
		hs, err = c.hosts(ctx)
	}
	if err != nil {
		ch <- prometheus.MustNewConstMetric(statsUpDesc, prometheus.GaugeValue, 0)
		return
	}
	sum := operator.SummarizeHosts(hs)
	for state, n := range map[string]int{push.HostUp: sum.Up, push.HostDown: sum.Down, push.HostUnavailable: sum.Unavailable} {
		ch <- prometheus.MustNewConstMetric(hostsDesc, prometheus.GaugeValue, float64(n), state)
	}
	ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(sum.Held))
	ch <- prometheus.MustNewConstMetric(statsUpDesc, prometheus.GaugeValue, 1)
	for ns, n := range st.Namespaces {
		for state, v := range map[string]int{push.StateReady: n.Ready, push.StateRetrying: n.Retrying, push.StateIdle: n.Idle, push.StateParked: n.Parked} {
			ch <- prometheus.MustNewConstMetric(registrationsDesc, prometheus.GaugeValue, float64(v), ns, state)
		}
		ch <- prometheus.MustNewConstMetric(parkedDesc, prometheus.GaugeValue, float64(n.Parked), ns)
		ch <- prometheus.MustNewConstMetric(behindDesc, prometheus.GaugeValue, float64(n.Behind), ns)
	}
}
