package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"golang.org/x/term"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// appendBatch is how many lines of a --file one transaction appends.
const appendBatch = 500

func newAppend(e *env) command {
	var (
		stream, file string
		one          journal.Entry
		batches      []batch
	)
	return command{
		use:   "append",
		short: "Append records to a stream: one from stdin, or many from a JSON Lines file",
		long: `Append one record, whose payload is read from stdin, or with --file, one record a
line of a JSON Lines file:

  {"id": "evt-1", "kind": "order.created", "payload": {"total": 42}}
  {"id": "evt-2", "kind": "blob", "content_type": "image/png", "payload_base64": "iVBORw0…"}
  {"id": "evt-3", "kind": "order.closed", "payload": {}, "final": true, "stream": "order/1002"}

A line is a record as the HTTP API's POST /v1/records takes it (README, "Over
HTTP": the payload's rules are the same), and "stream", which overrides
--stream: "payload" is JSON for a JSON content type, a JSON string stored as
its text for another; "payload_base64" carries bytes. The whole file is
checked before anything is appended, then appended in transactions of 500
lines. Appending an id that exists with the same content is a no-op, so a
failed run can simply be repeated.`,
		example: `  echo '{"type":"Create","id":"https://example.com/a/1"}' | herald append --stream actor/alice --id https://example.com/a/1 --kind Create --content-type application/activity+json
  herald append --stream task/8f3c --file lifecycle.jsonl`,
		db: createDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&stream, "stream", "", "the stream to append to (e.g. actor/alice, task/8f3c)")
			f.StringVar(&one.ID, "id", "", "the record id: unique, stable, the idempotency key")
			f.StringVar(&one.Kind, "kind", "", "what happened (e.g. Create, order.created, statusUpdate)")
			f.StringVar(&one.ContentType, "content-type", journal.DefaultContentType, "the payload's media type")
			f.BoolVar(&one.Final, "final", false, "seal the stream: nothing may be appended after this record")
			f.StringVar(&one.Traceparent, "traceparent", "", "W3C trace context of the append (00-<trace id>-<span id>-<flags>): each delivery is sent a child of it")
			f.StringVar(&one.Tracestate, "tracestate", "", "W3C tracestate sent with each delivery, as given (needs --traceparent)")
			f.StringVar(&file, "file", "", "a JSON Lines file of records, one a line")
		},
		check: func(c *call) (err error) {
			if file != "" {
				for _, f := range []string{"id", "kind", "content-type", "final", "traceparent", "tracestate"} {
					if c.changed(f) {
						return usagef("--%s applies to a single record: with --file, put it on each line", f)
					}
				}
				if batches, err = readJSONL(file, stream); err != nil {
					return err
				}
			} else {
				if err := c.need("stream", "id", "kind"); err != nil {
					return err
				}
				if one.Payload, err = readPayload(e.In); err != nil {
					return err
				}
				batches = []batch{{where: "append", stream: stream, entries: []journal.Entry{one}, lines: []int{0}}}
			}
			for i, bt := range batches {
				valid, err := journal.ValidateEntries(bt.stream, bt.entries, 0)
				switch {
				case err != nil && file == "":
					return fmt.Errorf("%s: %w (nothing was appended)", bt.where, stdinPayload(err))
				case err != nil:
					return fmt.Errorf("%w (nothing was appended)", lineError(file, bt, err))
				}
				batches[i].entries = valid
			}
			return nil
		},
		run: func(c *call) error {
			existed, err := checkFile(c.ctx(), c.b, file, batches)
			if err != nil {
				return err
			}
			bar := e.progress(len(batches), file)
			var out []appended
			for _, bt := range batches {
				recs, err := c.b.Append(c.ctx(), bt.stream, bt.entries...)
				switch {
				case err != nil && file == "":
					return fmt.Errorf("append: %w (nothing was appended)", stdinPayload(err))
				case err != nil:
					err = named{fmt.Errorf("%s: %w (%s stored before it; appending again is safe)", bt.where, err, plural(len(out), "record"))}
					if len(out) > 0 {
						// Not exit 2 (nothing was changed), whatever the
						// error: the records before it are stored.
						return &exitError{code: ExitError, err: err}
					}
					return err
				}
				for _, r := range recs {
					out = append(out, appended{Stream: r.Stream, Seq: r.Seq, ID: r.ID, Existed: existed[r.ID]})
				}
				_ = bar.Add(1)
			}
			_ = bar.Finish()
			return c.print(out, func(w io.Writer) {
				switch {
				case len(out) == 1 && out[0].Existed:
					fmt.Fprintf(w, "Already in the journal: %s#%d (id %s), same content; nothing was appended.\n", tbl.Clean(out[0].Stream), out[0].Seq, tbl.Clean(out[0].ID))
					return
				case len(out) == 1:
					fmt.Fprintf(w, "Appended %s#%d (id %s).\n", tbl.Clean(out[0].Stream), out[0].Seq, tbl.Clean(out[0].ID))
					return
				}
				streams, already := map[string]bool{}, 0
				for _, a := range out {
					streams[a.Stream] = true
					if a.Existed {
						already++
					}
				}
				if already == 0 {
					fmt.Fprintf(w, "Appended %s to %s.\n", plural(len(out), "record"), plural(len(streams), "stream"))
					return
				}
				fmt.Fprintf(w, "Appended %d of %s to %s: %s already in the journal with the same content.\n",
					len(out)-already, plural(len(out), "record"), plural(len(streams), "stream"), plural(already, "was", "were"))
			})
		},
	}
}

type appended struct {
	Stream  string `json:"stream"`
	Seq     uint64 `json:"seq"`
	ID      string `json:"id"`
	Existed bool   `json:"existed,omitempty"` // the journal held it already, same content: nothing was written
}

type batch struct {
	where   string // "line 3" or "lines 1-500 of f.jsonl"
	stream  string
	entries []journal.Entry
	lines   []int // the line of each entry
}

// checkFile refuses, before anything is appended, what the journal would
// refuse part way: an id it holds with other content (*journal.ConflictError)
// or a record for a sealed stream (*journal.SealedError). It returns the ids
// it holds with the same content. path is "" for a single append.
func checkFile(ctx context.Context, b backend, path string, batches []batch) (stored map[string]bool, err error) {
	type item struct {
		where, stream string
		entry         journal.Entry
		stored        *journal.Record // set by the lookups when the journal holds the id
	}
	refuse := func(it item, err error) error { return fmt.Errorf("%s: %w (nothing was appended)", it.where, err) }
	var items []item
	for _, bt := range batches {
		for i, en := range bt.entries {
			where := bt.where
			if path != "" {
				where = fmt.Sprintf("%s line %d", path, bt.lines[i])
			}
			items = append(items, item{where: where, stream: bt.stream, entry: en})
		}
	}
	var g errgroup.Group
	g.SetLimit(lookupParallelism)
	for i := range items {
		it := &items[i]
		g.Go(func() error {
			rec, err := b.Lookup(ctx, it.entry.ID)
			if ue, ok := errors.AsType[*journal.UnnumberedError](err); ok {
				rec, err = ue.Record, nil // held, waiting to be numbered: compared as any
			}
			switch {
			case errors.Is(err, journal.ErrNotFound):
				return nil
			case err != nil:
				return refuse(*it, fmt.Errorf("look up id %q: %w", it.entry.ID, err))
			}
			it.stored = &rec
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	stored = map[string]bool{}
	seen := map[string]bool{} // streams whose seal is checked: those of the records the journal does not hold yet
	for _, it := range items {
		if it.stored != nil {
			if err := journal.Same(*it.stored, it.stream, it.entry); err != nil {
				return nil, refuse(it, err)
			}
			stored[it.entry.ID] = true
			continue
		}
		if seen[it.stream] {
			continue
		}
		seen[it.stream] = true
		infos, err := b.Streams(ctx, store.StreamQuery{Stream: it.stream, Limit: 1})
		if err != nil {
			return nil, refuse(it, err)
		}
		if len(infos) == 1 && infos[0].FinalSeq > 0 {
			return nil, refuse(it, &journal.SealedError{Stream: it.stream, FinalSeq: infos[0].FinalSeq})
		}
	}
	return stored, nil
}

// lookupParallelism bounds the id lookups checkFile has in flight: enough to
// hide PostgreSQL's round trips, few enough for its pool.
const lookupParallelism = 8

func readPayload(r io.Reader) ([]byte, error) {
	if f, ok := r.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return nil, usagef("append reads the payload from stdin: pipe it in (or use --file)")
	}
	data, err := io.ReadAll(io.LimitReader(r, journal.DefaultMaxPayload+1))
	if err != nil {
		return nil, fmt.Errorf("read the payload from stdin: %w", err)
	}
	if len(data) > journal.DefaultMaxPayload {
		// Say how large it is, not where reading stopped: count the rest.
		rest, err := io.Copy(io.Discard, r)
		if err != nil {
			return nil, fmt.Errorf("read the payload from stdin: %w", err)
		}
		return nil, usageOf(journal.Invalid("payload", "is %d bytes, more than the limit of %d (1 MiB); nothing was appended",
			int64(len(data))+rest, journal.DefaultMaxPayload))
	}
	if len(data) == 0 {
		return nil, usagef("append read no payload from stdin: pipe the record's payload in (or use --file)")
	}
	return data, nil
}

// line is one line of an append --file: a record as the HTTP API takes
// it, and the stream it goes to.
type line struct {
	operator.RecordInput
	Stream string `json:"stream"`
}

// readJSONL parses a JSON Lines file into batches of consecutive lines of
// one stream, at most appendBatch each, refusing the first bad line.
func readJSONL(path, defaultStream string) ([]batch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, readError("--file", path, err, "")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 2*journal.DefaultMaxPayload+64*1024)
	var (
		out   []batch
		first int
		n     int
		// Refused as one batch would be, whichever batches its lines fall in.
		idLine    = map[string]int{}
		finalLine = map[string]int{}
	)
	for sc.Scan() {
		n++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		e, stream, err := parseLine(raw, defaultStream)
		if err != nil { // bad input, like a line that fails validation: exit 2
			return nil, usagef("%s line %d: %v (nothing was appended)", path, n, err)
		}
		if l, dup := idLine[e.ID]; dup {
			return nil, usagef("%s line %d: %v (nothing was appended)", path, n, journal.Invalid("id", "%q repeats the id of line %d", e.ID, l))
		}
		idLine[e.ID] = n
		if l, sealed := finalLine[stream]; sealed {
			return nil, usagef("%s line %d: %v (nothing was appended)", path, n,
				journal.Invalid("stream", "%q is sealed by the final record of line %d: nothing may follow it", stream, l))
		}
		if e.Final {
			finalLine[stream] = n
		}
		last := len(out) - 1
		if last < 0 || out[last].stream != stream || len(out[last].entries) >= appendBatch {
			first = n
			out = append(out, batch{stream: stream})
			last++
		}
		out[last].entries = append(out[last].entries, e)
		out[last].lines = append(out[last].lines, n)
		if first == n {
			out[last].where = fmt.Sprintf("%s line %d", path, n)
		} else {
			out[last].where = fmt.Sprintf("%s lines %d-%d", path, first, n)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, usagef("%s line %d: longer than the payload limit allows (nothing was appended)", path, n+1)
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, usagef("%s has no records", path)
	}
	return out, nil
}

func parseLine(raw []byte, defaultStream string) (journal.Entry, string, error) {
	var l line
	if err := operator.DecodeJSON(bytes.NewReader(raw), &l); err != nil {
		return journal.Entry{}, "", operator.JSONError("record", err)
	}
	stream := cmp.Or(l.Stream, defaultStream)
	if stream == "" {
		return journal.Entry{}, "", errors.New(`no stream: give --stream or a "stream" field`)
	}
	e, err := l.Entry("")
	return e, stream, err
}

// progress is a progress bar on stderr when it is a terminal, else silent.
func (e *env) progress(total int, what string) *progressbar.ProgressBar {
	f, ok := e.Err.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || total < 2 || e.json {
		return progressbar.DefaultSilent(int64(total))
	}
	return progressbar.NewOptions(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription("appending "+what),
		progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
}

// lineError names the line a batch's validation error is about ("f.jsonl
// line 7: invalid payload", not "entries[3].payload"), or the batch's lines.
func lineError(path string, bt batch, err error) error {
	var inv *journal.InvalidError
	if errors.As(err, &inv) {
		if i, field, ok := inv.InBatch(); ok && i < len(bt.lines) {
			return named{fmt.Errorf("%s line %d: %w", path, bt.lines[i], &journal.InvalidError{Field: field, Reason: inv.Reason})}
		}
	}
	return named{fmt.Errorf("%s: %w", bt.where, err)}
}

// stdinPayload names the payload of a single append by where it came from.
func stdinPayload(err error) error {
	var inv *journal.InvalidError
	if errors.As(err, &inv) {
		if _, f, ok := inv.InBatch(); ok && f == "payload" {
			return &journal.InvalidError{Field: "payload (stdin)", Reason: inv.Reason}
		}
	}
	return err
}
