package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

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
				if n%50 == 0 && e.json {
					e.logger.Info("pruning", "records_so_far", total.Records, "elapsed_seconds", int64(time.Since(start)/time.Second))
				} else if n%50 == 0 {
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
	intRange(cmd, "batch", fmt.Sprintf("from 1 to %d", store.MaxPruneBatch))
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
	intRange(cmd, "limit", "from 1 to 10000")
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
