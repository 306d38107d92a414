// Package table writes the aligned, sanitised text tables of the herald
// command and its demo: one header row, then one row a line, columns
// separated by at least two spaces.
package table

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
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

// Cell makes s safe for one table cell: Clean, and cut with an ellipsis
// when longer than MaxCell runes.
func Cell(s string) string {
	s = Clean(s)
	if r := []rune(s); len(r) > MaxCell {
		return string(r[:MaxCell-1]) + "…"
	}
	return s
}

// Clean is Cell without the cut, for a value shown whole on one line:
// tabs and line breaks become spaces, every other character that does not
// print as itself (Hidden) is shown as its code point (CodePoint), and an
// empty value is shown as "-".
func Clean(s string) string {
	if strings.IndexFunc(s, Hidden) >= 0 || strings.ContainsAny(s, "\t\n\r") || !utf8.ValidString(s) {
		var b strings.Builder
		for _, r := range s {
			switch {
			case r == '\t' || r == '\n' || r == '\r':
				b.WriteByte(' ')
			case Hidden(r):
				b.WriteString(CodePoint(r))
			default:
				b.WriteRune(r) // a byte that is not UTF-8 is U+FFFD here
			}
		}
		s = b.String()
	}
	if s == "" {
		return "-"
	}
	return s
}

// Hidden reports whether r does not print as itself, so that a stored
// value (a receiver's error body, a producer's stream name) holding it
// would hide or rearrange what is shown around it: not a letter, mark,
// number, punctuation, symbol or space character (unicode.IsGraphic).
// That is control characters (a terminal's escape sequences), format
// characters (the bidirectional overrides and isolates U+202A–U+202E and
// U+2066–U+2069, which reorder the text after them; zero-width characters,
// which make two names look the same), private-use and unassigned code
// points. Tab, line feed and carriage return are not Hidden: each place
// that shows text says what it does with them.
func Hidden(r rune) bool {
	return !unicode.IsGraphic(r) && r != '\t' && r != '\n' && r != '\r'
}

// Duration is how the CLI's tables and the operator's page show an
// attempt's duration: to the millisecond, or to the microsecond below one
// (a loopback answer), never as 3.03411ms.
func Duration(d time.Duration) string {
	if d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// CodePoint is how the CLI's tables and the operator's page show a Hidden
// character: its code point in guillemets, ‹U+202E›.
func CodePoint(r rune) string { return fmt.Sprintf("‹U+%04X›", r) }
