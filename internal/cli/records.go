package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/journal"
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
text. --json prints every record whole, with the field names of append --file
lines: "payload" for a JSON payload, "payload_base64" for any other, and seq and
appended_at.`, maxRecordsLimit),
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
			if err := journal.ValidateStream(stream); err != nil {
				return usagef("--stream: %v", err)
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
			if e.json {
				out := make([]recordView, len(recs))
				for i, r := range recs {
					out[i] = viewRecord(r)
				}
				return printJSON(e.Out, out)
			}
			if len(recs) == 0 {
				head, err := b.Head(cmd.Context(), stream)
				if err != nil && !errors.Is(err, journal.ErrNotFound) {
					return err
				}
				fmt.Fprintf(e.Out, "Stream %s has no records from #%d (head %d).\n", stream, fromSeq, head)
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
			return t.flush()
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
