package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
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

// errWriter keeps the first error writing to w, and writes nothing after it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (n int, err error) {
	if e.err != nil {
		return 0, e.err
	}
	n, e.err = e.w.Write(p)
	return n, e.err
}

// printRegistrations writes views as a table, saying when a window is
// capped by the default --max-per-host.
func printRegistrations(w io.Writer, views []operator.RegistrationView) {
	t := tbl.New(w, "STREAM", "ID", "NAMESPACE", "HOST", "KINDS", "WINDOW", "CURSOR", "HEAD", "LAG", "ATTEMPTS", "NEXT ATTEMPT", "STATE", "LAST ERROR")
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
		next := operator.Instant(v.NextAttemptAt)
		if v.Parked {
			next = "parked" // not attempted until unparked, whatever the stored instant
		}
		window := fmt.Sprint(v.Window)
		if v.Window > push.DefaultMaxPerHost {
			window = fmt.Sprintf("%d (%d at once)", v.Window, push.DefaultMaxPerHost)
			capped++
		}
		t.Row(v.Stream, v.ID, v.Namespace, v.Host, kinds, window, fmt.Sprint(v.NextSeq), fmt.Sprint(v.Head), fmt.Sprint(v.Lag),
			fmt.Sprint(v.Attempts), next, state, v.LastError)
	}
	if t.Flush(); capped > 0 {
		fmt.Fprintf(w, "(%d at once): a window above the default --max-per-host of herald run and sweep (%d), which caps a worker's messages in flight to one host; workers run with a larger --max-per-host fill it.\n",
			push.DefaultMaxPerHost, push.DefaultMaxPerHost)
	}
}

// hint names the herald command name for the operator to run next: with
// this command's --database, if given (HERALD_DATABASE_URL carries over by
// itself); "…" for a value holding a password.
func (e *env) hint(name string) string {
	if !e.databaseGiven {
		return "herald " + name
	}
	v := "…"
	if d, err := parseDatabase(e.databaseFrom, e.database); err == nil && d.String() == e.database {
		v = shellQuote(e.database)
	}
	return "herald " + name + " --database " + v
}

// shellQuote returns s as one word of a shell command line, so that a
// printed command can be pasted whatever s holds: as it is when no shell
// treats its characters specially; else in single quotes; and when it holds
// a character that does not print (ESC, U+202E, a byte that is not UTF-8),
// in ANSI-C quotes ($'…': bash, zsh, ksh) with each byte of that character
// as \xHH, which reads back the same bytes in any locale (\u does not), so
// that the terminal shows the character instead of obeying it.
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

// printable says whether a terminal shows r as itself: a space, or
// unicode.IsPrint.
func printable(r rune) bool { return r == ' ' || unicode.IsPrint(r) }

// plural writes n with the noun in the singular for 1, else in the plural
// given, or made with -s (-ies for a consonant and y).
func plural(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return fmt.Sprintf("%d %s", n, many[0])
	}
	if strings.HasSuffix(one, "y") && !strings.HasSuffix(one, "ey") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(one, "y"))
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// bytesText says a size in the unit that reads best (1 KiB = 1024 bytes).
func bytesText(n int64) string {
	switch {
	case n < 1<<10:
		return plural(int(n), "byte")
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
