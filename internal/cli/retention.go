package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
		retain string
		at     instant
		q      store.PruneQuery
	)
	return e.cobra(command{
		use:   "prune",
		short: "Remove records every registration acknowledged, once older than --retain",
		long: `Remove what the journal no longer needs, in small batches that never hold
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
		example: `  herald prune --dry-run
  herald prune --retain 30d
  herald prune --retain 0s --at 2026-03-15T12:00:00Z --json`,
		db: readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&retain, "retain", "7d", "keep acknowledged records this long: a duration (36h) or days (7d); 0s prunes as soon as acknowledged")
			f.Var(&at, "at", "the instant the retention is measured from: RFC 3339 or unix seconds (default now)")
			f.BoolVar(&q.DryRun, "dry-run", false, "report what would be removed, change nothing")
			intVar(f, &q.Limit, "batch", store.DefaultPruneBatch, "records removed per transaction", fmt.Sprintf("from 1 to %d", store.MaxPruneBatch), 1, store.MaxPruneBatch)
		},
		check: func(c *call) (err error) {
			q.Retain, err = parseRetain(retain)
			q.At = c.at(at)
			return err
		},
		run: func(c *call) error {
			var total store.PruneReport
			start := time.Now()
			for n := 1; ; n++ {
				rep, err := c.b.Prune(c.ctx(), q)
				if err != nil {
					return err
				}
				if total = total.Add(rep); !rep.More {
					break
				}
				if n%50 == 0 && e.json {
					e.logger.Info("pruning", "records_so_far", total.Records, "elapsed_seconds", int64(time.Since(start)/time.Second))
				} else if n%50 == 0 {
					fmt.Fprintf(e.Err, "herald: pruned %s so far (%s)\n", plural(total.Records, "record"), time.Since(start).Round(time.Second))
				}
			}
			total.More = false
			out := map[string]any{"dry_run": q.DryRun, "at": q.At.UTC(), "retain_seconds": int64(q.Retain / time.Second), "report": total}
			return c.print(out, func() error {
				verb := "Pruned"
				if q.DryRun {
					verb = "Would prune"
				}
				_, err := fmt.Fprintf(e.Out, "%s %s (%s of payload) from %s; %s removed whole; %s.\n", verb,
					plural(total.Records, "record"), bytesText(total.Bytes), plural(total.Streams, "stream"),
					plural(total.Removed, "sealed stream"), plural(total.Evidence, "evidence row"))
				return err
			})
		},
	})
}
