package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/push"
)

// printJSON writes v as indented JSON and a newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table is the CLI's text table (internal/table, shared with the demo).
type table struct{ *tbl.Table }

func newTable(w io.Writer, header ...string) *table { return &table{tbl.New(w, header...)} }

func (t *table) row(cells ...string) { t.Row(cells...) }

func (t *table) flush() error { return t.Flush() }

// cell makes s safe for one table cell (see table.Cell).
func cell(s string) string { return tbl.Cell(s) }

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func printRegistrations(w io.Writer, asJSON bool, views []operator.RegistrationView) error {
	if asJSON {
		return printJSON(w, views)
	}
	t := newTable(w, "STREAM", "ID", "NAMESPACE", "HOST", "KINDS", "WINDOW", "CURSOR", "HEAD", "LAG", "ATTEMPTS", "NEXT ATTEMPT", "STATE", "LAST ERROR")
	capped := 0
	for _, v := range views {
		kinds := "all"
		if len(v.Kinds) > 0 {
			kinds = strings.Join(v.Kinds, ",")
		}
		state := v.State
		if v.HeldFor != "" {
			state = "held: host " + v.HeldFor
		}
		next := fmtTime(v.NextAttemptAt)
		if v.Parked {
			next = "parked" // not attempted until unparked, whatever the stored instant
		}
		window := fmt.Sprint(v.Window)
		if windowNote(v.Window) != "" {
			window = fmt.Sprintf("%d (%d at once)", v.Window, push.DefaultMaxPerHost)
			capped++
		}
		t.row(v.Stream, v.ID, v.Namespace, v.Host, kinds, window, fmt.Sprint(v.NextSeq), fmt.Sprint(v.Head), fmt.Sprint(v.Lag),
			fmt.Sprint(v.Attempts), next, state, v.LastError)
	}
	if err := t.flush(); err != nil || capped == 0 {
		return err
	}
	_, err := fmt.Fprintf(w, "(%d at once): a window above the default --max-per-host of herald run and sweep (%d), which caps a worker's messages in flight to one host; workers run with a larger --max-per-host fill it.\n",
		push.DefaultMaxPerHost, push.DefaultMaxPerHost)
	return err
}

// command is how a hint names the herald command name for the operator
// to run next: "herald name", and --database when this command was given
// one on its command line (HERALD_DATABASE_URL carries over by itself),
// so that the hint reads the same database. A value holding a password is
// "…", which the operator fills in: no output prints a password.
func (e *env) command(name string) string {
	if !e.databaseGiven {
		return "herald " + name
	}
	v := "…"
	if d, err := parseDatabase(e.databaseFrom, e.database); err == nil && d.String() == e.database {
		v = shellQuote(e.database)
	}
	return "herald " + name + " --database " + v
}

// shellQuote returns s as one word of a shell command line: as it is when
// it holds only characters no shell treats specially; else in single quotes
// (each single quote in s closes them, is escaped, and reopens them), so
// that a printed command can be pasted whatever the stream or id holds (& #
// ; $ spaces, quotes); and when s holds a character that does not print
// (a control character such as ESC, a format character such as U+202E, a
// byte that is not UTF-8), in ANSI-C quotes ($'…': bash, zsh, ksh) with
// each byte of that character written \xHH, which reads back the same
// bytes whatever the shell's locale (\u does not, in the C locale), so that
// the terminal shows the character instead of obeying it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !printable(r) }) < 0 {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case !printable(r):
			for j := range n {
				fmt.Fprintf(&b, `\x%02x`, s[i+j])
			}
		default:
			b.WriteRune(r)
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}

// printable says whether a terminal shows r as itself: a space, or a
// graphic character (unicode.IsPrint: no control, format, private-use,
// surrogate or unassigned code point, no line or paragraph separator).
func printable(r rune) bool { return r == ' ' || unicode.IsPrint(r) }
