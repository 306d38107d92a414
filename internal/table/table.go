// Package table writes the aligned, sanitised text tables of the herald
// command and its demo: one header row, then one row a line, columns
// separated by at least two spaces.
package table

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/heraldpush/herald/push"
)

// MaxCell is how many runes a cell shows; longer values are cut with "…"
// (except in a row's last cell, see Row).
const MaxCell = 60

// Table writes aligned columns to a writer. Cells are sanitised (see Cell)
// so that a receiver's answer or an id cannot break the layout or send
// terminal escapes. Nothing is written until Flush.
type Table struct {
	tw *tabwriter.Writer
}

// New returns a table writing to w, with header as its first row.
func New(w io.Writer, header ...string) *Table {
	t := &Table{tw: tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)}
	t.Row(header...)
	return t
}

// Row adds one row; cells are passed through Cell, but the last one is not
// cut: nothing follows it to misalign, and it is where tables put their
// longest value (the error a receiver answered), which an operator needs
// whole.
func (t *Table) Row(cells ...string) {
	out := make([]string, len(cells))
	for i, c := range cells {
		if i == len(cells)-1 {
			out[i] = Clean(c)
			continue
		}
		out[i] = Cell(c)
	}
	fmt.Fprintln(t.tw, strings.Join(out, "\t"))
}

// Flush writes the table and returns the writer's error.
func (t *Table) Flush() error { return t.tw.Flush() }

// Cell makes s safe for one table cell: characters that do not print as
// themselves become spaces (control characters, tabs and line breaks
// included, and format characters such as the bidirectional overrides
// U+202A–U+202E and U+2066–U+2069, which would reorder what follows them on
// the terminal's line), values longer than MaxCell runes are cut
// with an ellipsis, and an empty value is shown as "-".
func Cell(s string) string {
	s = Clean(s)
	if r := []rune(s); len(r) > MaxCell {
		return string(r[:MaxCell-1]) + "…"
	}
	return s
}

// Clean is Cell without the cut, for a value shown whole.
func Clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r != ' ' && !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s)
	if s == "" {
		return "-"
	}
	return s
}

// Registration names a registration in human output: push.Name.
func Registration(stream, id string) string { return push.Name(stream, id) }
