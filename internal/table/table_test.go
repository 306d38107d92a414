package table_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/internal/table"
)

func ExampleTable() {
	t := table.New(os.Stdout, "STREAM", "DELIVERED", "LAST ERROR")
	t.Row("actor/alice", "7", "")
	t.Row("webhooks/shop", "12", "503 Service Unavailable")
	_ = t.Flush()
	// Output:
	// STREAM         DELIVERED  LAST ERROR
	// actor/alice    7          -
	// webhooks/shop  12         503 Service Unavailable
}

// A cell cannot break the layout, reach the terminal as an escape or
// reorder the line; what it hid is shown as its code point.
func TestCellSanitises(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "-"},
		{"a\tb\nc\x1b[31m", "a b c‹U+001B›[31m"},
		{"line\u2028sep\r", "line‹U+2028›sep "},
		{"abc\u202edef\u2066g\u200bh", "abc‹U+202E›def‹U+2066›g‹U+200B›h"}, // bidirectional overrides, isolates, a zero-width space
		{"nbsp\u00a0é 中", "nbsp\u00a0é 中"},                                 // spaces and letters of every script print
		{"\U000F0000 \u0378", "‹U+F0000› ‹U+0378›"},                        // private use, unassigned
		{strings.Repeat("x", table.MaxCell), strings.Repeat("x", table.MaxCell)},
		{strings.Repeat("é", table.MaxCell+1), strings.Repeat("é", table.MaxCell-1) + "…"},
	} {
		if got := table.Cell(c.in); got != c.want {
			t.Errorf("Cell(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The last cell of a row is shown whole (sanitised): an error an operator
// must read is not cut at MaxCell.
func TestLastCellWhole(t *testing.T) {
	var b strings.Builder
	long := "503 Service Unavailable: " + strings.Repeat("the upstream pool is exhausted, ", 4) + "end"
	tb := table.New(&b, "A", "LAST ERROR")
	tb.Row(strings.Repeat("y", table.MaxCell+5), long+"\x1b[2J")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, long+"‹U+001B›[2J") {
		t.Errorf("last cell cut or unsanitised:\n%s", out)
	}
	if strings.Contains(out, strings.Repeat("y", table.MaxCell)) {
		t.Errorf("other cells are still cut at MaxCell:\n%s", out)
	}
}

// An attempt's duration is shown to the millisecond, or to the
// microsecond below one.
func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		3034110 * time.Nanosecond: "3ms",
		1500 * time.Millisecond:   "1.5s",
		412345 * time.Nanosecond:  "412µs",
		0:                         "0s",
	} {
		if got := table.Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}
