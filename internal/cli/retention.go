package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/store"
)

// maxRetain bounds --retain: ten years, past which a typo (a missing unit
// scale) is likelier than an intent.
const maxRetain = 10 * 365 * 24 * time.Hour

// parseRetain reads --retain: a Go duration ("168h", "30m", "0s") or whole
// days ("7d"). Errors are usage errors naming the flag.
func parseRetain(s string) (time.Duration, error) {
	bad := func(why string) error {
		return usagef("--retain %q %s (e.g. 7d, 36h, 30m; 0s prunes as soon as every registration acknowledged)", s, why)
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return 0, bad("is not a whole number of days")
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, bad("is not a duration")
		}
	}
	switch {
	case d < 0:
		return 0, bad("is negative")
	case d > maxRetain:
		return 0, bad("is more than ten years")
	}
	return d, nil
}

func newPrune(e *env) *cobra.Command {
	var (
		retain, atFlag string
		dryRun         bool
		batch          int
	)
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove records every registration acknowledged, once older than --retain",
		Long: `Remove what the journal no longer needs, in small batches that never hold
appends or sweeps for long (the daemon does the same every --prune-every):

  - a record once every registration of its stream, parked ones included, has
    acknowledged it and it is older than --retain (at --at): the stream's
    low-water mark (herald streams, OLDEST) rises past it;
  - a record of a stream nobody follows, once older than --retain;
  - a sealed stream whose registrations all completed, once its final record
    is older than --retain: the stream is gone, and its name may be used again;
  - evidence older than --retain, except the reason a parked registration is
    parked.

Rewinding or skipping below a low-water mark is refused afterwards. --dry-run
reports what would go and changes nothing.`,
		Example: `  herald prune --dry-run
  herald prune --retain 30d
  herald prune --retain 0s --at 2026-03-15T12:00:00Z --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := parseRetain(retain)
			if err != nil {
				return err
			}
			at := e.now()
			if atFlag != "" {
				if at, err = parseInstant(atFlag); err != nil {
					return err
				}
			}
			if batch < 1 || batch > store.MaxPruneBatch {
				return usagef("--batch %d must be from 1 to %d", batch, store.MaxPruneBatch)
			}
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			q := store.PruneQuery{At: at, Retain: d, Limit: batch, DryRun: dryRun}
			var total store.PruneReport
			start := time.Now()
			for n := 1; ; n++ {
				rep, err := b.Prune(cmd.Context(), q)
				if err != nil {
					return err
				}
				total = total.Add(rep)
				if !rep.More {
					break
				}
				if n%50 == 0 {
					fmt.Fprintf(e.Err, "herald: pruned %s so far (%s)\n", plural(total.Records, "record"), time.Since(start).Round(time.Second))
				}
			}
			total.More = false
			if e.json {
				return printJSON(e.Out, map[string]any{"dry_run": dryRun, "at": at.UTC(), "retain_seconds": int64(d / time.Second), "report": total})
			}
			verb := "Pruned"
			if dryRun {
				verb = "Would prune"
			}
			fmt.Fprintf(e.Out, "%s %s (%s of payload) from %s; %s removed whole; %s.\n", verb,
				plural(total.Records, "record"), bytesText(total.Bytes), plural(total.Streams, "stream"),
				plural(total.Removed, "sealed stream"), plural(total.Evidence, "evidence row"))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&retain, "retain", "7d", "keep acknowledged records this long: a duration (36h) or days (7d); 0s prunes as soon as acknowledged")
	f.StringVar(&atFlag, "at", "", "the instant the retention is measured from: RFC 3339 or unix seconds (default now)")
	f.BoolVar(&dryRun, "dry-run", false, "report what would be removed, change nothing")
	f.IntVar(&batch, "batch", store.DefaultPruneBatch, "records removed per transaction")
	return cmd
}

func newStreams(e *env) *cobra.Command {
	var (
		stream, after string
		limit         int
	)
	cmd := &cobra.Command{
		Use:   "streams",
		Short: "List streams: head, final seq, oldest retained seq, registrations, retained bytes",
		Long: `List streams in name order with their head (the newest seq), their final seq
when sealed, OLDEST (the oldest retained seq, the low-water mark: records below
it were pruned; head+1 when none is retained), their registrations and the
payload bytes they retain. Page with --after and --limit.`,
		Example: `  herald streams
  herald streams --stream order/1001 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 10000 {
				return usagef("--limit %d must be from 1 to 10000", limit)
			}
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			infos, err := b.Streams(cmd.Context(), store.StreamQuery{Stream: stream, After: after, Limit: limit})
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.Out, infos)
			}
			if len(infos) == 0 {
				fmt.Fprintln(e.Out, "No streams.")
				return nil
			}
			t := newTable(e.Out, "STREAM", "HEAD", "FINAL", "OLDEST", "RECORDS", "BYTES", "REGISTRATIONS")
			for _, s := range infos {
				final := "-"
				if s.FinalSeq > 0 {
					final = fmt.Sprint(s.FinalSeq)
				}
				t.row(s.Stream, fmt.Sprint(s.Head), final, fmt.Sprint(s.OldestSeq), fmt.Sprint(s.Records),
					bytesText(s.Bytes), fmt.Sprint(s.Registrations))
			}
			return t.flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&stream, "stream", "", "only this stream")
	f.StringVar(&after, "after", "", "list streams after this name (paging)")
	f.IntVar(&limit, "limit", 100, "streams listed at most")
	return cmd
}

// bytesText says a size in the unit that reads best (1 KiB = 1024 bytes).
func bytesText(n int64) string {
	switch {
	case n < 1<<10:
		return plural(int(n), "byte")
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// pruner is the daemon's retention: a pass of small batches every interval,
// with a pause between batches so appends and sweeps go first.
type pruner struct {
	e      *env
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
			p.e.logger.Error("herald: prune failed; trying again at the next interval", "err", err)
		case rep.Records > 0 || rep.Removed > 0 || rep.Evidence > 0:
			p.e.logger.Info("herald: pruned", "records", rep.Records, "bytes", rep.Bytes, "streams", rep.Streams,
				"streams_removed", rep.Removed, "evidence", rep.Evidence)
		}
		if p.passed != nil {
			p.passed(rep, err)
		}
		timer.Reset(p.every)
	}
}

func (p *pruner) pass(ctx context.Context) (store.PruneReport, error) {
	var total store.PruneReport
	q := store.PruneQuery{At: p.e.now(), Retain: p.retain}
	for {
		rep, err := p.b.Prune(ctx, q)
		total = total.Add(rep)
		if err != nil || !rep.More {
			total.More = false
			return total, err
		}
		select {
		case <-ctx.Done():
			return total, nil
		case <-time.After(pruneBatchPause):
		}
	}
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
