// Package table writes the aligned, sanitised text tables of the herald
// command and its demo: a header row, then a row a line, columns at least
// two spaces apart.
package table

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// MaxCell is how many runes a cell shows; a longer value is cut with "…"
// (but in a row's last cell, see Row).
const MaxCell = 60

// Table writes aligned columns of cells made safe by Cell, so that a
// receiver's answer can neither break the layout nor send terminal escapes.
// Nothing is written until Flush.
type Table struct {
	tw *tabwriter.Writer
}

// New returns a table writing to w, with header as its first row.
func New(w io.Writer, header ...string) *Table {
	t := &Table{tw: tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)}
	t.Row(header...)
	return t
}

// Row adds one row of Cells, but its last cell is only Clean: nothing
// follows it to misalign, and it holds a table's longest value (the error
// a receiver answered), which an operator needs whole.
func (t *Table) Row(cells ...string) {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = Cell(c)
		if i == len(cells)-1 {
			out[i] = Clean(c)
		}
	}
	fmt.Fprintln(t.tw, strings.Join(out, "\t"))
}

// Flush writes the table and returns the writer's error.
func (t *Table) Flush() error { return t.tw.Flush() }

// Cell is Clean, cut with an ellipsis when longer than MaxCell runes.
func Cell(s string) string {
	s = Clean(s)
	if r := []rune(s); len(r) > MaxCell {
		return string(r[:MaxCell-1]) + "…"
	}
	return s
}

// Clean makes s safe to show whole on one line: tabs and line breaks
// become spaces, every other Hidden character its CodePoint, invalid UTF-8
// U+FFFD, and an empty value "-".
func Clean(s string) string {
	var b strings.Builder
	for _, r := range s { // an invalid byte is utf8.RuneError, U+FFFD
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case Hidden(r):
			b.WriteString(CodePoint(r))
		default:
			b.WriteRune(r)
		}
	}
	return cmp.Or(b.String(), "-")
}

// Hidden reports whether r does not print as itself (not unicode.IsGraphic)
// and so could hide or reorder the text around it: control characters
// (terminal escapes), format characters (bidirectional overrides,
// zero-width characters), private-use and unassigned code points. Tab and
// line breaks are not Hidden: each place that shows text treats them.
func Hidden(r rune) bool {
	return !unicode.IsGraphic(r) && r != '\t' && r != '\n' && r != '\r'
}

// Duration shows an attempt's duration to the millisecond, or to the
// microsecond below one (a loopback answer): never as 3.03411ms.
func Duration(d time.Duration) string {
	if d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// CodePoint shows a Hidden character as its code point in guillemets:
// ‹U+202E›.
func CodePoint(r rune) string { return fmt.Sprintf("‹U+%04X›", r) }
