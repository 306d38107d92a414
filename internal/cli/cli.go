// Package cli implements the herald command, each command run alike by the
// runner (runner.go); cmd/herald is a thin main.
package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald"
	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store"
)

// Exit codes, as `herald --help` documents them.
const (
	ExitOK        = 0
	ExitError     = 1 // the command failed; the message says what to do
	ExitUsage     = 2 // bad flags, arguments or values; nothing was changed
	ExitAttention = 3 // sweep: the report needs attention (saturated or a backlog, something parked)
)

// Stdio is the command's standard streams.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// env is what every command shares: streams and global flags.
type env struct {
	Stdio
	getenv        func(string) string
	database      string
	databaseFrom  string        // "--database", or HERALD_DATABASE_URL when that set it
	databaseGiven bool          // on the command line: a hint's command needs it too (hint)
	seqEvery      time.Duration // herald run --sequencer-interval; 0: the store's default
	keyringFile   string        // --keyring-file
	keys          *seal.Keyring // what the open database's store seals with (keyring.go); nil: none
	json          bool
	verbose       bool
	logger        *slog.Logger
}

// Main runs the herald command with args (without the program name) and
// returns the exit code.
func Main(ctx context.Context, args []string, stdio Stdio, getenv func(string) string) int {
	e := &env{Stdio: stdio, getenv: getenv}
	root := newRoot(e)
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	strictHelp(root)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if msg, ok := strings.CutPrefix(err.Error(), "unknown command "); ok {
		// cobra's own error for a mistyped command, its suggestions on
		// lines of their own: one line, as a mistyped flag's.
		first, more, _ := strings.Cut(msg, "\n")
		if q, err := strconv.QuotedPrefix(first); err == nil {
			name, _ := strconv.Unquote(q)
			first = journal.Quoted(name) + first[len(q):] // the name as typed, bounded
		}
		if _, sugs, ok := strings.Cut(more, "Did you mean this?"); ok && len(strings.Fields(sugs)) > 0 {
			first += "; did you mean " + strings.Join(strings.Fields(sugs), " or ") + "?"
		}
		err = callError(errors.New("unknown command " + first))
	}
	var ex *exitError
	if errors.As(err, &ex) && ex.err == nil {
		return ex.code
	}
	asJSON := e.json || jsonAsked(args) // a flag error may come before --json is parsed
	if asJSON {
		_ = printJSON(stdio.Err, map[string]string{"error": err.Error()})
	} else {
		fmt.Fprintf(stdio.Err, "herald: %v\n", err)
	}
	switch {
	case errors.As(err, &ex):
		return ex.code
	case isUsage(err):
		if u := (usageError{}); errors.As(err, &u) && u.call && !asJSON {
			fmt.Fprintf(stdio.Err, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return ExitUsage
	case errors.Is(err, journal.ErrInvalid), errors.Is(err, journal.ErrNotFound), errors.Is(err, store.ErrNotHerald),
		errors.As(err, new(*journal.ConflictError)), errors.As(err, new(*journal.SealedError)):
		// Nothing was changed, and the command cannot succeed as it is (a
		// bare ErrConflict, an append that raced another, may: exit 1).
		return ExitUsage
	}
	return ExitError
}

const rootLong = `herald delivers what an application appended to its journal to the receivers
that registered for it: at least once, in order per registration, as ActivityPub
activities, CloudEvents, A2A push notifications or Standard Webhooks. A
receiver that keeps failing, or answers 410 Gone, is parked with its cursor
kept; an operator lists it and unparks it, and nothing is lost.

Database: only register, append, keys add, tokens create, migrate up and demo
create (and migrate) a new SQLite file; the others refuse a path with no file. sweep,
run, reseal and keyring retire migrate an older one up; commands that read, or
change an existing registration, migrate nothing.

Exit codes:
  0  success
  1  the command failed (the message says what to do)
  2  usage: bad flags, arguments or values (a --database with no database
     there, for a command that creates none; a registration, record or host that
     does not exist; a record id stored with other content; a sealed
     stream); nothing was changed
  3  sweep: the report needs attention (saturated or a backlog left: sweep
     again soon; or a registration parked)`

func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "herald",
		Short:         "A durable push engine: journal, cursors, and at-least-once delivery",
		Long:          rootLong,
		Version:       herald.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			e.databaseGiven = cmd.Flags().Changed("database")
			if !e.databaseGiven {
				if v := e.getenv("HERALD_DATABASE_URL"); v != "" {
					e.database, e.databaseFrom = v, "HERALD_DATABASE_URL"
				}
			}
			opts := &slog.HandlerOptions{Level: slog.LevelInfo}
			if e.verbose {
				opts.Level = slog.LevelDebug
			}
			var h slog.Handler = slog.NewTextHandler(e.Err, opts)
			if e.json {
				h = slog.NewJSONHandler(e.Err, opts) // scripts read stderr too: one JSON object a line, as its error
			}
			e.logger = slog.New(h)
			return nil
		},
	}
	root.SetFlagErrorFunc(flagError)
	pf := root.PersistentFlags()
	pf.StringVar(&e.database, "database", defaultDatabase, "sqlite:PATH or postgres://… URL (env HERALD_DATABASE_URL)")
	pf.StringVar(&e.keyringFile, "keyring-file", "", keyringFlagUsage)
	pf.BoolVar(&e.json, "json", false, "print JSON instead of tables, for scripts (log lines and errors on stderr are JSON too)")
	pf.BoolVarP(&e.verbose, "verbose", "v", false, "log debug detail (every failed attempt)")
	for _, d := range []command{
		newMigrate(e), newAppend(e), newRegister(e), newUnregister(e), newSubscriptions(e), newSweep(e), newRun(e),
		newRegistrations(e), newUnpark(e), newPause(e, false), newPause(e, true), newResend(e), newSkip(e), newRewind(e), newRotateSecret(e), newEvidence(e), newStatus(e),
		newHosts(e), newRecordStatus(e), newRecords(e), newStreams(e), newPrune(e), newTokens(e), newKeys(e), newDemo(e),
		newKeyring(e), newReseal(e),
	} {
		root.AddCommand(e.cobra(d))
	}
	return root
}

// strictHelp makes cobra's own help and completion, which print help and
// exit 0 for a topic or a shell they do not know, refuse it, as every other
// command refuses a bad argument. It is called once root's output is set:
// completion's commands keep the writer they are made with.
func strictHelp(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch run := c.Run; c.Name() {
		case "help":
			c.Run, c.RunE = nil, func(cmd *cobra.Command, args []string) error {
				if _, _, err := root.Find(args); err != nil {
					return callError(err)
				}
				run(cmd, args)
				return nil
			}
		case "completion":
			c.RunE = func(*cobra.Command, []string) error {
				return callf("completion takes a shell: bash, zsh, fish or powershell")
			}
		}
	}
}

// exitError carries an exit code; with a nil err nothing more is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// jsonAsked says whether args ask for --json (--json, --json=true and the
// other true values of a bool flag), before the flags are parsed.
func jsonAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" {
			return true
		}
		if v, ok := strings.CutPrefix(a, "--json="); ok {
			if b, err := strconv.ParseBool(v); err == nil && b {
				return true
			}
		}
	}
	return false
}

// usageError marks bad flags, arguments or values (exit 2); call marks a
// command line that is wrong in its shape (a flag or command herald does not
// have, a flag without its value, a required flag missing, arguments where
// there are none), which the command's --help answers. A value it does not
// take (--limit many, a bad --kind, a bad line of --file) is not: its
// message says what to give.
type usageError struct {
	err  error
	call bool
}

// callError marks err, a refusal of the command line's shape, as one.
func callError(err error) error {
	if err == nil {
		return nil
	}
	var u usageError
	if !errors.As(err, &u) {
		u.err = err
	}
	u.call = true
	return u
}

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{err: fmt.Errorf(format, args...)} }

// callf is usagef for a command line of the wrong shape (callError).
func callf(format string, args ...any) error { return callError(fmt.Errorf(format, args...)) }

func usageOf(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err: err}
}

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// printJSON writes v as indented JSON, its text as written: no browser
// reads it, so <, > and & need no escapes.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
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
	t := tbl.New(w, "STREAM", "ID", "NAMESPACE", "HOST", "KINDS", "WINDOW", "RATE", "CURSOR", "HEAD", "LAG", "ATTEMPTS", "NEXT ATTEMPT", "STATE", "LAST ERROR")
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
		switch { // not attempted until resumed or unparked, whatever the stored instant
		case v.Paused:
			next = "paused"
		case v.Parked:
			next = "parked"
		}
		window := fmt.Sprint(v.Window)
		if v.Window > push.DefaultMaxPerHost {
			window = fmt.Sprintf("%d (%d at once)", v.Window, push.DefaultMaxPerHost)
			capped++
		}
		t.Row(v.Stream, v.ID, v.Namespace, v.Host, kinds, window, cmp.Or(v.Rate, "none"), fmt.Sprint(v.NextSeq), fmt.Sprint(v.Head), fmt.Sprint(v.Lag),
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
	if d, err := parseDatabase(e.databaseFrom, e.database); err == nil && (d.kind == "sqlite" || !mayHoldPassword(e.database)) {
		v = shellQuote(e.database)
	}
	return "herald " + name + " --database " + v
}

// shellQuote returns s as one word of a shell command line: as it is, in
// single quotes, or, when it holds a character that does not print, in
// ANSI-C quotes ($'…') with each byte of that character as \xHH, which
// reads back in any locale and which the terminal shows, never obeys.
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

// printable says whether a terminal shows r as itself.
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
