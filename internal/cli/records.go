package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// maxRecordsLimit bounds one `herald records`: payloads are up to 1 MiB each.
const maxRecordsLimit = 1000

// payloadPreview is how many runes of a payload the table shows.
const payloadPreview = 100

func newRecords(e *env) *cobra.Command {
	var (
		stream  string
		fromSeq uint64
		limit   int
	)
	cmd := &cobra.Command{
		Use:   "records",
		Short: "Read a stream's journal: seq, id, kind, appended-at and the payload",
		Long: fmt.Sprintf(`Read a stream's records in seq order, from --from-seq (1, the stream's
beginning), at most --limit (up to %d). The table shows the start of each payload
with control characters replaced, and only the size of one that is not UTF-8
text. Below the table it says when more records exist past the last one shown, and
when records from --from-seq were pruned (retention: the oldest kept seq).
--json prints an object: "stream", "head", "oldest_seq" (records below it
were pruned), "more" (records exist past the last one shown) with
"next_from_seq", "pruned" (some asked for were pruned), and "records", each
whole with the field names of append --file lines: "payload" for a JSON
payload, "payload_base64" for any other, and seq and appended_at.`, maxRecordsLimit),
		Example: `  herald records --stream orders/1001
  herald records --stream actor/alice --from-seq 40 --limit 10 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "stream"); err != nil {
				return err
			}
			if fromSeq < 1 {
				return usagef("--from-seq %d must be 1 or more (seqs are 1-based)", fromSeq)
			}
			if limit < 1 || limit > maxRecordsLimit {
				return usagef("--limit %d must be from 1 to %d", limit, maxRecordsLimit)
			}
			if err := checkStream(stream); err != nil {
				return err
			}
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			recs, err := b.Read(cmd.Context(), stream, fromSeq, limit)
			if err != nil {
				return err
			}
			// The stream's head and low-water mark, read after the
			// records: a head past the last one shown means more exist.
			page := recordsPage{Stream: stream, OldestSeq: 1, Records: make([]recordView, len(recs))}
			if cmd.Flags().Changed("limit") {
				page.limit = limit
			}
			infos, err := b.Streams(cmd.Context(), store.StreamQuery{Stream: stream, Limit: 1})
			if err != nil {
				return err
			}
			if len(infos) == 1 {
				page.Head, page.OldestSeq = infos[0].Head, infos[0].OldestSeq
			}
			if len(recs) > 0 && recs[len(recs)-1].Seq < page.Head {
				page.More, page.NextFromSeq = true, recs[len(recs)-1].Seq+1
			}
			page.Pruned = fromSeq < page.OldestSeq && page.OldestSeq > 1
			if e.json {
				for i, r := range recs {
					page.Records[i] = viewRecord(r)
				}
				return printJSON(e.Out, page)
			}
			if len(recs) == 0 {
				fmt.Fprintf(e.Out, "Stream %s has no records from #%d (head %d).\n", cell(stream), fromSeq, page.Head)
				page.printNotes(e)
				return nil
			}
			t := newTable(e.Out, "SEQ", "ID", "KIND", "CONTENT TYPE", "APPENDED", "FINAL", "PAYLOAD")
			for _, r := range recs {
				final := "no"
				if r.Final {
					final = "yes"
				}
				t.row(fmt.Sprint(r.Seq), r.ID, r.Kind, r.ContentType, fmtTime(r.AppendedAt), final, preview(r.Payload))
			}
			if err := t.flush(); err != nil {
				return err
			}
			page.printNotes(e)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&stream, "stream", "", "the stream to read (required)")
	f.Uint64Var(&fromSeq, "from-seq", 1, "the first seq to show")
	f.IntVar(&limit, "limit", 100, fmt.Sprintf("at most this many records (up to %d)", maxRecordsLimit))
	intRange(cmd, "from-seq", "1 or more (seqs are 1-based)")
	intRange(cmd, "limit", fmt.Sprintf("from 1 to %d", maxRecordsLimit))
	return cmd
}

// recordsPage is what `records --json` prints: the records read, and
// where they sit in the stream.
type recordsPage struct {
	Stream string `json:"stream"`
	// limit is the --limit given (0: the default), which the hint for the
	// next page repeats.
	limit int
	// Head is the stream's newest seq (0: none); OldestSeq its oldest
	// retained one (Head+1 when none is): records below it were pruned.
	Head      uint64 `json:"head"`
	OldestSeq uint64 `json:"oldest_seq"`
	// More says records exist past the last one shown (--limit stopped
	// the page); NextFromSeq is the --from-seq that reads them.
	More        bool   `json:"more"`
	NextFromSeq uint64 `json:"next_from_seq,omitempty"`
	// Pruned says records from --from-seq up to OldestSeq-1 were
	// removed by retention: they cannot be shown.
	Pruned  bool         `json:"pruned"`
	Records []recordView `json:"records"`
}

// printNotes says, below the table, what the page does not show.
func (p recordsPage) printNotes(e *env) {
	if p.Pruned {
		fmt.Fprintf(e.Out, "Records before #%d were pruned (retention): #%d is the oldest kept.\n", p.OldestSeq, p.OldestSeq)
	}
	if p.More {
		again := fmt.Sprintf("%s --stream %s --from-seq %d", e.command("records"), shellQuote(p.Stream), p.NextFromSeq)
		if p.limit > 0 {
			again += fmt.Sprintf(" --limit %d", p.limit)
		}
		fmt.Fprintf(e.Out, "More records up to #%d: %s\n", p.Head, again)
	}
}

// recordView is a record as `records --json` prints it: the field names of
// append --file lines, plus seq and appended_at.
type recordView struct {
	Stream        string          `json:"stream"`
	Seq           uint64          `json:"seq"`
	ID            string          `json:"id"`
	Kind          string          `json:"kind"`
	ContentType   string          `json:"content_type"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	PayloadBase64 []byte          `json:"payload_base64,omitempty"` // encoding/json writes []byte as base64
	Final         bool            `json:"final"`
	AppendedAt    time.Time       `json:"appended_at"`
}

func viewRecord(r journal.Record) recordView {
	v := recordView{Stream: r.Stream, Seq: r.Seq, ID: r.ID, Kind: r.Kind, ContentType: r.ContentType, Final: r.Final, AppendedAt: r.AppendedAt}
	if isJSONType(r.ContentType) && json.Valid(r.Payload) {
		var b bytes.Buffer
		if json.Compact(&b, r.Payload) == nil {
			v.Payload = b.Bytes()
			return v
		}
	}
	v.PayloadBase64 = r.Payload
	return v
}

// preview is the start of a payload for a table cell: UTF-8 text with its
// control characters replaced (the table does that), cut at payloadPreview
// runes; the size alone for bytes that are not UTF-8.
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
