package cli

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

func newUnregister(e *env) *cobra.Command {
	var k key
	cmd := &cobra.Command{
		Use:   "unregister",
		Short: "Remove a registration and its evidence; the journal keeps every record",
		Long: `Remove a registration: its receiver gets nothing more, and its cursor, retry
state and evidence are deleted. The journal is not touched. It prints the
cursor it had, so that register --from-seq can bring it back where it was.`,
		Example: `  herald unregister --stream orders/1001 --id billing`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "stream", "id"); err != nil {
				return err
			}
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			before, err := b.Get(cmd.Context(), k.stream, k.id)
			if err != nil {
				return k.notFound(err)
			}
			if err := b.Unregister(cmd.Context(), k.stream, k.id); err != nil {
				return err
			}
			if e.json {
				return printJSON(e.Out, map[string]any{"unregistered": viewOf(before)})
			}
			fmt.Fprintf(e.Out, "Unregistered %s (%s to %s) at cursor %d, with %s not delivered; its evidence is deleted.\n",
				regName(k.stream, k.id), before.Namespace, before.Host(), before.NextSeq, plural(int(before.Lag()), "record"))
			fmt.Fprintf(e.Out, "To bring it back there: herald register --stream %s --id %s --namespace %s --url … --from-seq %d\n",
				shellQuote(k.stream), shellQuote(k.id), before.Namespace, before.NextSeq)
			return nil
		},
	}
	k.flags(cmd)
	return cmd
}

// shellQuote returns s as one word of a shell command line: as it is when
// it holds only characters no shell treats specially; else in single quotes
// (each single quote in s closes them, is escaped, and reopens them), so
// that a printed command can be pasted whatever the stream or id holds (& #
// ; $ spaces, quotes); and when s holds a character that does not print
// (a control character such as ESC, a format character such as U+202E, a
// byte that is not UTF-8), in ANSI-C quotes ($'…', bash, zsh, ksh and
// POSIX.1-2024 sh) with that character escaped, so that the terminal shows
// it instead of obeying it.
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
		case r < 0x80 && !printable(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case !printable(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case !printable(r):
			fmt.Fprintf(&b, `\U%08x`, r)
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
