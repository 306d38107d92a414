package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/push"
)

// workerFlags are the worker options of sweep, run and demo.
type workerFlags struct {
	maxAttempts, maxInFlight, maxPerHost, drainPage int
	maxRetryAfter, lease, hostHorizon               time.Duration
}

func (w *workerFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&w.maxAttempts, "max-attempts", push.DefaultMaxAttempts, "park a registration on the failure that makes its attempts at one record reach this")
	f.IntVar(&w.maxInFlight, "max-in-flight", push.DefaultMaxInFlight, "registrations served at once")
	f.IntVar(&w.maxPerHost, "max-per-host", push.DefaultMaxPerHost,
		fmt.Sprintf("messages in flight to one host (host:port), 1 to %d: a silent host holds no more slots, and small servers are not flooded", push.MaxPerHostLimit))
	f.IntVar(&w.drainPage, "drain-page", push.DefaultDrainPage, "records a turn sends between two cursor writes (the bound on duplicates after a crash)")
	f.DurationVar(&w.maxRetryAfter, "max-retry-after", push.DefaultMaxRetryAfter, "cap on a receiver's Retry-After")
	f.DurationVar(&w.lease, "lease", push.DefaultLease, "how long a claimed registration is hidden from other workers")
	f.DurationVar(&w.hostHorizon, "host-horizon", push.DefaultHostHorizon, "how long a host may be down before it is unavailable (probed hourly), 1h to 8760h")
	intRange(cmd, "max-attempts", "at least 1")
	intRange(cmd, "max-in-flight", "at least 1")
	intRange(cmd, "max-per-host", fmt.Sprintf("from 1 to %d", push.MaxPerHostLimit))
	intRange(cmd, "drain-page", fmt.Sprintf("from 1 to %d", push.MaxDrainPage))
}

// minLease is push.WithLease's floor (push has no constant for it).
const minLease = 2 * time.Second

// check refuses, as usage errors naming the flag, what NewWorker would
// refuse without naming it, before the command opens its database.
func (w *workerFlags) check() error {
	switch {
	case w.maxAttempts < 1:
		return usagef("--max-attempts %d must be at least 1 (1 means a single try)", w.maxAttempts)
	case w.maxInFlight < 1:
		return usagef("--max-in-flight %d must be at least 1", w.maxInFlight)
	case w.maxPerHost < 1 || w.maxPerHost > push.MaxPerHostLimit:
		return usagef("--max-per-host %d must be from 1 to %d", w.maxPerHost, push.MaxPerHostLimit)
	case w.drainPage < 1 || w.drainPage > push.MaxDrainPage:
		return usagef("--drain-page %d must be from 1 to %d", w.drainPage, push.MaxDrainPage)
	case w.lease < minLease:
		return usagef("--lease %v must be at least %v", w.lease, minLease)
	case w.maxRetryAfter < time.Second:
		return usagef("--max-retry-after %v must be at least 1s", w.maxRetryAfter)
	}
	if w.hostHorizon < push.MinHostHorizon || w.hostHorizon > push.MaxHostHorizon {
		return usagef("--host-horizon %v must be from %v to %v", w.hostHorizon, push.MinHostHorizon, push.MaxHostHorizon)
	}
	return nil
}

func (w *workerFlags) options(e *env) []push.Option {
	return []push.Option{push.WithMaxAttempts(w.maxAttempts), push.WithMaxInFlight(w.maxInFlight), push.WithMaxPerHost(w.maxPerHost),
		push.WithDrainPage(w.drainPage), push.WithMaxRetryAfter(w.maxRetryAfter), push.WithLease(w.lease),
		push.WithHostHorizon(w.hostHorizon), push.WithLogger(e.logger)}
}

// newWorker builds the worker for namespace ns; bad options are a usage error.
func newWorker(b backend, t push.Transport, ns string, opts []push.Option) (*push.Worker, error) {
	w, err := push.NewWorker(b, b, t, namespaces[ns].projection(), opts...)
	if err != nil {
		return nil, usageError{err}
	}
	return w, nil
}

func newSweep(e *env) *cobra.Command {
	var (
		ns, atFlag string
		limit      int
		tf         transportFlags
		wf         workerFlags
	)
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run one sweep of a namespace at a given instant, and print its report (scheduler mode)",
		Long: `Run one sweep (RunOnce) of a namespace: claim up to --limit due registrations,
deliver their records, and print the report. --at is the sweep's instant
(default now): it decides what is due, backoff, lease expiry and signature
dates. Run it from cron, a Kubernetes CronJob or a test.

The network guard (--allow-http, --allow-private-network, --allow-host) is
this process's: a URL it refuses parks the registration, even if a herald run
with other flags delivers to it. Give every process that sweeps a database
the same guard flags.

Exit 0, or 3 when the report needs attention (saturated: more were due than
--limit; or backlog: a turn gave its slot up with records still behind its
cursor; either way sweep again soon; or a registration was parked), 1 on
error, or 2 on a usage error (a bad flag, --at or --limit, or a --database
with no database there). A host that failed at host level (no connection, a
timeout, a TLS failure, a gateway's 502/503/504) is named in the report,
with what herald does next; it is no cause for exit 3: its registrations
wait for it and nothing parks (see herald hosts).`,
		Example: `  herald sweep --namespace webhook
  herald sweep --namespace activitypub --at 2026-03-15T11:00:00Z --limit 500 --json
  herald sweep --namespace a2a --at 1773572400`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "namespace"); err != nil {
				return err
			}
			if err := checkNamespace(ns); err != nil {
				return err
			}
			if err := wf.check(); err != nil {
				return err
			}
			at := e.now()
			if atFlag != "" {
				var err error
				if at, err = parseInstant(atFlag); err != nil {
					return err
				}
			}
			if limit < 1 {
				return usagef("--limit %d must be at least 1", limit)
			}
			tr, err := tf.build(e)
			if err != nil {
				return err
			}
			b, err := e.openServing(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			w, err := newWorker(b, tr, ns, wf.options(e))
			if err != nil {
				return err
			}
			rep, err := w.RunOnce(cmd.Context(), at, limit)
			var failed []push.Host
			if rep.HostFailures > 0 {
				var ferr error
				if failed, ferr = failedHosts(cmd.Context(), b, at); ferr != nil && err == nil {
					err = ferr
				}
			}
			if perr := printReport(e, ns, at, rep, failed); perr != nil && err == nil {
				err = perr
			}
			if err != nil {
				return err
			}
			if rep.NeedsAttention() {
				return &exitError{code: ExitAttention}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&ns, "namespace", "", "the namespace to sweep: "+strings.Join(namespaceNames(), ", ")+" (required)")
	f.StringVar(&atFlag, "at", "", "the sweep's instant: RFC 3339 (2026-03-15T11:00:00Z) or unix seconds (default now)")
	f.IntVar(&limit, "limit", push.DefaultSweepLimit, "claim at most this many registrations")
	intRange(cmd, "limit", "at least 1")
	tf.add(cmd)
	wf.add(cmd)
	return cmd
}

// parseInstant reads RFC 3339 or unix seconds.
func parseInstant(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > 253402300799 {
			return time.Time{}, usagef("--at %s is out of range for unix seconds", s)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	// RFC 3339 lets a space stand for the T (its section 5.6 note), as
	// herald's tables print an instant (2026-03-15 11:00:00Z), so that one can
	// be pasted back.
	rfc := s
	if len(rfc) > 10 && rfc[10] == ' ' {
		rfc = rfc[:10] + "T" + rfc[11:]
	}
	t, err := time.Parse(time.RFC3339Nano, rfc)
	if err != nil {
		return time.Time{}, usagef("--at %q is neither RFC 3339 (2026-03-15T11:00:00Z, or with a space for the T as tables print it) nor unix seconds", s)
	}
	if t.Before(time.Unix(0, 0)) {
		return time.Time{}, usagef("--at %s is before 1970: out of range", s)
	}
	return t.UTC(), nil
}

type reportView struct {
	Namespace string    `json:"namespace"`
	At        time.Time `json:"at"`
	push.SweepReport
	// FailedHosts are the hosts with a host-level failure at this sweep's
	// instant, as stored after it: state, failures in a row, next probe.
	FailedHosts    []push.Host `json:"failed_hosts"`
	NeedsAttention bool        `json:"needs_attention"`
}

// failedHosts lists the hosts whose last host-level failure is at the
// sweep's instant at (or later: another sweep's), as stored: those this
// sweep charged. Stores keep instants to the microsecond at least.
func failedHosts(ctx context.Context, hs push.HostStore, at time.Time) ([]push.Host, error) {
	all, err := push.AllHosts(ctx, hs, push.HostQuery{})
	if err != nil {
		return nil, err
	}
	from := at.Truncate(time.Microsecond)
	var out []push.Host
	for _, h := range all {
		if h.Failures > 0 && !h.LastFailureAt.Before(from) {
			out = append(out, h)
		}
	}
	return out, nil
}

func printReport(e *env, ns string, at time.Time, r push.SweepReport, failed []push.Host) error {
	if e.json {
		if failed == nil {
			failed = []push.Host{}
		}
		return printJSON(e.Out, reportView{Namespace: ns, At: at, SweepReport: r, FailedHosts: failed, NeedsAttention: r.NeedsAttention()})
	}
	fmt.Fprintf(e.Out, "Sweep of %s at %s: %s, %s acknowledged, %s, %s, %d parked, %d skipped, %d completed.\n",
		ns, at.UTC().Format(time.RFC3339), plural(r.Registrations, "registration"), plural(r.Records, "record"),
		plural(r.Deliveries, "delivery"), plural(r.Retries, "retry"), r.Parked, r.Skipped, r.Completed)
	if r.Unserved > 0 {
		fmt.Fprintf(e.Out, "%s of other namespaces due (not served by this sweep).\n", plural(r.Unserved, "registration"))
	}
	if r.Errors > 0 {
		fmt.Fprintf(e.Out, "%s ended on a store error (not counted against their receivers).\n", plural(r.Errors, "turn"))
	}
	if r.HostFailures > 0 {
		fmt.Fprintf(e.Out, "%s ended on a host-level failure: no attempt charged, nothing parked; the host backs off (see herald hosts).\n", plural(r.HostFailures, "turn"))
	}
	for _, h := range failed {
		switch h.State {
		case push.HostUp:
			fmt.Fprintf(e.Out, "Host %s failed (%d in a row; down after %d): its registrations retry with backoff. Last error: %s\n",
				cell(h.Host), h.Failures, push.DefaultHostDownAfter, cell(h.LastError))
		default:
			fmt.Fprintf(e.Out, "Host %s is %s since %s (%d failures in a row): its registrations are held, not charged; next probe at %s. Last error: %s\n",
				cell(h.Host), h.State, fmtTime(h.Since), h.Failures, fmtTime(h.NextProbeAt), cell(h.LastError))
		}
	}
	if r.Saturated {
		fmt.Fprintln(e.Out, "Saturated: more registrations were due than --limit; sweep again soon.")
	}
	if r.Backlog > 0 {
		fmt.Fprintf(e.Out, "%s records left to send (a turn gave its slot up, or its budget ran out): sweep again soon.\n", plural(r.Backlog, "registration has", "registrations have"))
	}
	if r.Parked > 0 {
		fmt.Fprintln(e.Out, "Registrations were parked: see herald registrations --parked, then herald unpark.")
	}
	return nil
}

// plural writes n with the noun in the singular for 1, else in the plural
// given, or made with -s (-ies for a consonant and y).
func plural(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return fmt.Sprintf("%d %s", n, many[0])
	}
	if strings.HasSuffix(one, "y") && !strings.HasSuffix(one, "ey") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(one, "y"))
	}
	return fmt.Sprintf("%d %ss", n, one)
}
