package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// maxRecordsLimit bounds one herald records: payloads are up to 1 MiB each.
const maxRecordsLimit = 1000

// recordsMaxBytes bounds the payloads of one herald records: a page stops
// before the record that would pass it, and the table says more follow.
const recordsMaxBytes = 16 << 20

// payloadPreview is how many runes of a payload the table shows.
const payloadPreview = 100

func newRecords(e *env) command {
	var (
		stream  string
		fromSeq uint64
		limit   int
	)
	return command{
		use:   "records",
		short: "Read a stream's journal: seq, id, kind, appended-at and the payload",
		long: fmt.Sprintf(`Read a stream's records in seq order, from --from-seq, at most --limit (up to
%d) and 16 MiB of payloads. The table shows the start of each payload (the size of one that is not
UTF-8 text), and says when more records follow and when records from
--from-seq were pruned, and how many records past the head are committed but
not yet numbered (PostgreSQL, with no daemon running). --json prints the page, each record whole with the
field names of append --file lines ("payload" for JSON, compacted, and for
text; "payload_base64" for other bytes), seq, appended_at and its trace
context.`, maxRecordsLimit),
		example: `  herald records --stream orders/1001
  herald records --stream actor/alice --from-seq 40 --limit 10 --json`,
		need: []string{"stream"},
		db:   readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&stream, "stream", "", "the stream to read (required)")
			intVar(f, &fromSeq, "from-seq", 1, "the first seq to show", "1 or more (seqs are 1-based)", 1, 0)
			intVar(f, &limit, "limit", 100, fmt.Sprintf("at most this many records (up to %d)", maxRecordsLimit), fmt.Sprintf("from 1 to %d", maxRecordsLimit), 1, maxRecordsLimit)
		},
		check: func(*call) error { return usageOf(journal.ValidateRead(stream, fromSeq, limit, recordsMaxBytes)) },
		run: func(c *call) error {
			recs, err := c.b.Read(c.ctx(), stream, fromSeq, limit, recordsMaxBytes)
			if err != nil {
				return err
			}
			// After the records: a head past the last one shown means more.
			page := recordsPage{Stream: stream, OldestSeq: 1, Records: make([]operator.RecordOutput, len(recs))}
			infos, err := c.b.Streams(c.ctx(), store.StreamQuery{Stream: stream, Limit: 1})
			if err != nil {
				return err
			}
			if len(infos) == 1 {
				page.Head, page.OldestSeq, page.Unnumbered = infos[0].Head, infos[0].OldestSeq, infos[0].Unnumbered
			}
			if len(recs) > 0 && recs[len(recs)-1].Seq < page.Head {
				page.More, page.NextFromSeq = true, recs[len(recs)-1].Seq+1
			}
			page.Pruned = fromSeq < page.OldestSeq && page.OldestSeq > 1
			for i, r := range recs {
				page.Records[i] = operator.OutputRecord(r)
			}
			return c.print(page, func(w io.Writer) {
				if len(recs) == 0 {
					fmt.Fprintf(w, "Stream %s has no records from #%d (head %d).\n", tbl.Cell(stream), fromSeq, page.Head)
				} else {
					t := tbl.New(w, "SEQ", "ID", "KIND", "CONTENT TYPE", "APPENDED", "FINAL", "PAYLOAD")
					for _, r := range recs {
						t.Row(fmt.Sprint(r.Seq), r.ID, r.Kind, r.ContentType, operator.Instant(r.AppendedAt), yesNo(r.Final), preview(r.Payload))
					}
					t.Flush()
				}
				if page.Pruned {
					fmt.Fprintf(w, "Records before #%d were pruned (retention): #%d is the oldest kept.\n", page.OldestSeq, page.OldestSeq)
				}
				if page.More {
					again := fmt.Sprintf("%s --stream %s --from-seq %d", e.hint("records"), shellQuote(page.Stream), page.NextFromSeq)
					if c.changed("limit") { // the default needs no repeating
						again += fmt.Sprintf(" --limit %d", limit)
					}
					fmt.Fprintf(w, "More records up to #%d: %s\n", page.Head, again)
				}
				if page.Unnumbered > 0 {
					fmt.Fprintf(w, "%s past #%d committed but waiting to be numbered: is a daemon running? (herald run numbers them, as does herald sweep)\n",
						plural(int(page.Unnumbered), "record"), page.Head)
				}
			})
		},
	}
}

// recordsPage is what records --json prints.
type recordsPage struct {
	Stream      string                  `json:"stream"`
	Head        uint64                  `json:"head"`       // the stream's newest seq (0: none)
	OldestSeq   uint64                  `json:"oldest_seq"` // the oldest retained (Head+1 when none is): those below were pruned
	More        bool                    `json:"more"`       // records exist past the last one shown
	NextFromSeq uint64                  `json:"next_from_seq,omitempty"`
	Pruned      bool                    `json:"pruned"`     // records from --from-seq up to OldestSeq-1 were pruned
	Unnumbered  uint64                  `json:"unnumbered"` // records committed past Head, waiting to be numbered (PostgreSQL)
	Records     []operator.RecordOutput `json:"records"`
}

// preview is the start of a payload for a table cell, or its size when it
// is not UTF-8.
func preview(p []byte) string {
	if !utf8.Valid(p) {
		return fmt.Sprintf("(%s, not UTF-8 text: see --json)", plural(len(p), "byte"))
	}
	var b bytes.Buffer
	if json.Compact(&b, p) == nil {
		p = b.Bytes()
	}
	if r := []rune(string(p)); len(r) > payloadPreview {
		return string(r[:payloadPreview-1]) + fmt.Sprintf("… (%s)", plural(len(p), "byte"))
	}
	return string(p)
}

func newStreams(e *env) command {
	var q store.StreamQuery
	return command{
		use:   "streams",
		short: "List streams: head, final seq, oldest retained seq, registrations, retained bytes",
		long: `List streams in name order with their head (the newest seq), their final seq
when sealed, OLDEST (the oldest retained seq, the low-water mark: records below
it were pruned; head+1 when none is retained), their registrations and the
payload bytes they retain, and, when some wait, the records committed but not
yet numbered (PostgreSQL). Page with --after and --limit.`,
		example: `  herald streams
  herald streams --stream order/1001 --json`,
		db: readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&q.Stream, "stream", "", "only this stream")
			f.StringVar(&q.After, "after", "", "list streams after this name (paging)")
			intVar(f, &q.Limit, "limit", 100, "streams listed at most", "from 1 to 10000", 1, 10000)
		},
		run: func(c *call) error {
			infos, err := c.b.Streams(c.ctx(), q)
			if err != nil {
				return err
			}
			return c.print(infos, func(w io.Writer) {
				if len(infos) == 0 {
					fmt.Fprintln(w, "No streams.")
					return
				}
				waiting := slices.ContainsFunc(infos, func(s store.StreamInfo) bool { return s.Unnumbered > 0 })
				cols := []string{"STREAM", "HEAD", "FINAL", "OLDEST", "RECORDS", "BYTES", "REGISTRATIONS"}
				if waiting {
					cols = append(cols, "WAITING TO BE NUMBERED")
				}
				t := tbl.New(w, cols...)
				for _, s := range infos {
					final := "-"
					if s.FinalSeq > 0 {
						final = fmt.Sprint(s.FinalSeq)
					}
					row := []string{s.Stream, fmt.Sprint(s.Head), final, fmt.Sprint(s.OldestSeq), fmt.Sprint(s.Records), bytesText(s.Bytes), fmt.Sprint(s.Registrations)}
					if waiting {
						row = append(row, fmt.Sprint(s.Unnumbered))
					}
					t.Row(row...)
				}
				t.Flush()
				if waiting {
					fmt.Fprintln(w, "Records waiting to be numbered are committed: is a daemon running? (herald run numbers them, as does herald sweep)")
				}
			})
		},
	}
}

// maxRetain bounds --retain: ten years, past which a typo (a missing unit
// scale) is likelier than an intent.
const maxRetain = 10 * 365 * 24 * time.Hour

// retainHelp is --retain's help, for prune and run alike: 0s is not "off"
// but "keep nothing once done with" (store.PruneQuery.Retain).
var retainHelp = "keep what is done with this long: a duration (36h) or whole days (7d), 0s to " + store.FormatDays(maxRetain) + "; " +
	"0s keeps nothing once done with: a record goes as soon as every registration of its stream acknowledged it " +
	"(at once if none follows the stream), evidence at once but a parked registration's reason (herald prune --help)"

// parseRetain reads --retain (store.ParseDays).
func parseRetain(s string) (time.Duration, error) {
	d, err := store.ParseDays("--retain", s, 0, maxRetain)
	return d, usageOf(err)
}

func newPrune(e *env) command {
	var (
		retain string
		at     instant
		q      store.PruneQuery
	)
	return command{
		use:   "prune",
		short: "Remove records every registration acknowledged, once older than --retain",
		long: `Remove what the journal no longer needs, in small batches that never hold
appends or sweeps for long (the daemon does the same every --prune-every):

  - a record once every registration of its stream, parked ones included, has
    acknowledged it and it is older than --retain (at --at): the stream's
    low-water mark (herald streams, OLDEST) rises past it;
  - a record older than --retain that a registration has not acknowledged
    but has held past its --retain-max (herald register): that registration's
    cursor moves past the lost records, with "expired" evidence and a
    herald.registration.expired event naming them;
  - a record of a stream nobody follows, once older than --retain;
  - a sealed stream whose registrations all completed, once its final record
    is older than --retain: the stream is gone, and its name may be used again;
  - evidence older than --retain, except the reason a parked registration is
    parked;
  - a host's health (herald hosts) once no registration is of the host and
    its last failure is older than --retain.

Rewinding or skipping below a low-water mark is refused afterwards. --dry-run
reports what would go and changes nothing.`,
		example: `  herald prune --dry-run
  herald prune --retain 30d
  herald prune --retain 0s --at 2026-03-15T12:00:00Z --json`,
		db: readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&retain, "retain", "7d", retainHelp)
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
			start := time.Now()
			total, err := operator.Prune(c.ctx(), c.b, q, func(n int, total store.PruneReport) error {
				switch {
				case n%50 == 0 && e.json:
					e.logger.Info("pruning", "records_so_far", total.Records, "elapsed_seconds", int64(time.Since(start)/time.Second))
				case n%50 == 0:
					fmt.Fprintf(e.Err, "herald: pruned %s so far (%s)\n", plural(total.Records, "record"), time.Since(start).Round(time.Second))
				}
				return nil
			})
			if err != nil {
				return err
			}
			out := map[string]any{"dry_run": q.DryRun, "at": q.At.UTC(), "retain_seconds": int64(q.Retain / time.Second), "report": total}
			return c.print(out, func(w io.Writer) {
				verb := "Pruned"
				if q.DryRun {
					verb = "Would prune"
				}
				fmt.Fprintf(w, "%s %s (%s of payload) from %s; %s removed whole; %s; %s.\n", verb,
					plural(total.Records, "record"), bytesText(total.Bytes), plural(total.Streams, "stream"),
					plural(total.Removed, "sealed stream"), plural(total.Evidence, "evidence row"), plural(total.Hosts, "host row"))
			})
		},
	}
}
