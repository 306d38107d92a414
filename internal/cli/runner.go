package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
)

// command declares one herald command. env.cobra refuses arguments (unless
// args says), missing flags (need) and bad values (check) before it opens
// the database as db says, runs run, and names in errors the flag that set a
// library's field (asFlags).
type command struct {
	use, short, long, example string
	args                      func(args []string) error // nil: none
	need                      []string                  // flags that must be given
	db                        openMode
	flags                     func(f *pflag.FlagSet)
	check                     func(c *call) error // before the database is opened
	run                       func(c *call) error
	subcommands               []command
}

// call is one run of a command.
type call struct {
	*env
	cmd   *cobra.Command
	args  []string
	b     backend // nil when the command opens none
	after []func()
}

func (c *call) ctx() context.Context { return c.cmd.Context() }

func (c *call) changed(flag string) bool { return c.cmd.Flags().Changed(flag) }

// need refuses, as a usage error of the command line's shape, a command
// line without flags, naming every one missing.
func (c *call) need(flags ...string) error {
	var missing []string
	for _, n := range flags {
		if !c.changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	list := strings.Join(missing, ", ")
	if n := len(missing); n > 1 {
		list = strings.Join(missing[:n-1], ", ") + " and " + missing[n-1]
	}
	return callf("%s needs %s", strings.TrimPrefix(c.cmd.CommandPath(), "herald "), list)
}

// onExit runs f when the command ends, whatever its outcome.
func (c *call) onExit(f func()) { c.after = append(c.after, f) }

// print writes v as JSON with --json, else has text write to stdout; it
// returns the first error writing.
func (c *call) print(v any, text func(w io.Writer)) error {
	if c.json {
		return printJSON(c.Out, v)
	}
	w := &errWriter{w: c.Out}
	text(w)
	return w.err
}

// printTable prints rows as JSON, or as a table under header with a line a
// value, or the line empty when there is none.
func printTable[T any](c *call, rows []T, empty string, header []string, row func(T) []string) error {
	return c.print(rows, func(w io.Writer) {
		if len(rows) == 0 {
			fmt.Fprintln(w, empty)
			return
		}
		t := tbl.New(w, header...)
		for _, v := range rows {
			t.Row(row(v)...)
		}
		t.Flush()
	})
}

// at is the instant a flag of the instant type gave, or now.
func (c *call) at(t instant) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t.Time
}

func (e *env) cobra(d command) *cobra.Command {
	cmd := &cobra.Command{Use: d.use, Short: d.short, Long: d.long, Example: d.example}
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		switch {
		case d.args != nil:
			return d.args(args) // callError for a count of arguments, usagef for a value
		case len(args) > 0:
			return callf("%s takes no arguments, got %s", strings.TrimPrefix(cmd.CommandPath(), "herald "), journal.Quoted(strings.Join(args, " ")))
		}
		return nil
	}
	if d.flags != nil {
		d.flags(cmd.Flags())
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := &call{env: e, cmd: cmd, args: args}
		defer func() {
			for i := len(c.after) - 1; i >= 0; i-- {
				c.after[i]()
			}
		}()
		if err := c.need(d.need...); err != nil {
			return err
		}
		if d.check != nil {
			if err := d.check(c); err != nil {
				return asFlags(cmd, err)
			}
		}
		if d.db != noDB {
			b, err := e.open(c.ctx(), d.db)
			if err != nil {
				return err
			}
			defer b.Close()
			c.b = b
		}
		return asFlags(cmd, d.run(c))
	}
	for _, s := range d.subcommands {
		cmd.AddCommand(e.cobra(s))
	}
	return cmd
}

// asFlags names, in the libraries' validation errors err holds, the flag of
// cmd that set the field ("invalid config.secrets[1]" is "invalid --secret
// (the 2nd)"), keeping what err wraps (its exit code).
func asFlags(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	eachInvalid(err, func(inv *journal.InvalidError) {
		if mapped, ok := flagField(cmd, inv); ok {
			msg = strings.Replace(msg, inv.Error(), mapped, 1)
		}
	})
	if msg == err.Error() {
		return err
	}
	return renamed{err, msg}
}

// renamed is an error told in other words.
type renamed struct {
	error
	msg string
}

func (r renamed) Error() string { return r.msg }
func (r renamed) Unwrap() error { return r.error }

// named marks an error whose fields are named as the user gave them (the
// lines of append --file), not by a flag: asFlags leaves it.
type named struct{ error }

func (n named) Unwrap() error { return n.error }

// eachInvalid calls f with each *journal.InvalidError err holds.
func eachInvalid(err error, f func(*journal.InvalidError)) {
	switch e := err.(type) {
	case named:
	case *journal.InvalidError:
		f(e)
	case interface{ Unwrap() []error }:
		for _, p := range e.Unwrap() {
			eachInvalid(p, f)
		}
	case interface{ Unwrap() error }:
		if inner := e.Unwrap(); inner != nil {
			eachInvalid(inner, f)
		}
	}
}

// flagField is inv's text with its field, and the fields its reason names,
// named by the flags of cmd that set them.
func flagField(cmd *cobra.Command, inv *journal.InvalidError) (string, bool) {
	field := inv.Field
	if _, f, ok := inv.InBatch(); ok {
		field = f // entries[0].kind of a single append
	}
	prefix := ""
	if strings.HasPrefix(field, "config.") {
		prefix = "config."
	}
	key, index, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(field, prefix), "Options."), "[")
	name := flagName(key)
	if cmd.Flags().Lookup(name) == nil { // a config's field no flag of cmd sets: named without the API's "config."
		reason, bare := flagWords(cmd, inv.Reason), strings.TrimPrefix(inv.Field, "config.")
		return (&journal.InvalidError{Field: bare, Reason: reason}).Error(), reason != inv.Reason || bare != inv.Field
	}
	flag := "--" + name
	if n, err := strconv.Atoi(strings.TrimSuffix(index, "]")); err == nil && index != "" {
		flag += " (the " + ordinal(n+1) + ")"
	} else if index != "" { // a key: the header of config.headers[X-Tenant]
		flag += " " + strings.TrimSuffix(index, "]")
	}
	reason := flagWords(cmd, inv.Reason)
	if ref, ok := strings.CutPrefix(reason, "repeats "+prefix+key+"["); ok {
		if n, err := strconv.Atoi(strings.TrimSuffix(ref, "]")); err == nil {
			reason = "repeats the " + ordinal(n+1)
		}
	}
	return (&journal.InvalidError{Field: flag, Reason: reason}).Error(), true
}

// fieldWord matches a library's field name in a reason: a snake_case word
// ("private_key", "auth_scheme"), never an English one; or a quoted value.
var fieldWord = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|\b[a-z]+(?:_[a-z]+)+\b`)

// flagWords is reason with each field it names that a flag of cmd sets
// named by that flag ("give private_key" is "give --private-key-file"),
// leaving quoted values as they are.
func flagWords(cmd *cobra.Command, reason string) string {
	return fieldWord.ReplaceAllStringFunc(reason, func(w string) string {
		if name := flagName(w); !strings.HasPrefix(w, `"`) && cmd.Flags().Lookup(name) != nil {
			return "--" + name
		}
		return w
	})
}

// rangeRefusal matches a library's refusal of a value out of its range:
// "is 0: it must be at least 1", "\"sometimes\" must be \"retry\" or \"skip\"".
var rangeRefusal = regexp.MustCompile(`^(?:is (.+?): it|(".*?")) (must be .+)$`)

// asRangeError tells a library's refusal of a value out of its range as the
// flags' ranges are told: "invalid MaxAttempts: is 0: it must be at least 1"
// is "--max-attempts 0 must be at least 1", a usage error.
func asRangeError(err error) error {
	var inv *journal.InvalidError
	if !errors.As(err, &inv) {
		return err
	}
	m := rangeRefusal.FindStringSubmatch(inv.Reason)
	if m == nil {
		return err
	}
	return usagef("--%s %s%s %s", flagName(strings.TrimPrefix(inv.Field, "Options.")), m[1], m[2], m[3])
}

// flagNames are the fields whose flag is not their name in kebab case.
var flagNames = map[string]string{
	"registration id":     "id",
	"AllowHosts":          "allow-host",
	"MaxIdleConnsPerHost": "max-per-host",
	"secrets":             "secret",
	"headers":             "header",
	"version":             "a2a-version",
	"private_key":         "private-key-file",
	"proof_private_key":   "proof-private-key-file",
	"actors":              "actor",
}

// flagName is the flag that sets a library's field: flagNames' or the
// field's API name (operator.Field) in kebab case ("to_seq", "content_type",
// "MaxInFlight").
func flagName(field string) string {
	field = operator.Field(field)
	if name, ok := flagNames[field]; ok {
		return name
	}
	var b strings.Builder
	for i, r := range field {
		switch {
		case r == ' ' || r == '_':
			b.WriteByte('-')
		case unicode.IsUpper(r):
			if i > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ordinal spells n as 1st, 2nd, 3rd, 4th, … 11th, 12th, 13th, 21st.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// intValue is an integer flag that knows its range, in words for errors.
type intValue[T int | uint64] struct {
	p           *T
	name, words string
	lo, hi      T // lo 0: the library it is passed to checks; hi 0: no upper bound
}

// intVar declares an integer flag within [lo, hi], or with lo 0 one whose
// range the library checks.
func intVar[T int | uint64](f *pflag.FlagSet, p *T, name string, value T, usage, words string, lo, hi T) {
	*p = value
	f.Var(&intValue[T]{p: p, name: name, words: words, lo: lo, hi: hi}, name, usage)
}

func (v *intValue[T]) String() string { return fmt.Sprint(*v.p) }

func (v *intValue[T]) Type() string { return fmt.Sprintf("%T", *v.p) }

func (v *intValue[T]) Set(s string) error {
	var n T
	switch p := any(&n).(type) {
	case *int:
		i, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return err
		}
		*p = int(i)
	case *uint64:
		u, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return err
		}
		*p = u
	}
	if v.lo != 0 && (n < v.lo || v.hi != 0 && n > v.hi) {
		return usagef("--%s %s must be %s", v.name, journal.Shown(s), v.words)
	}
	*v.p = n
	return nil
}

// instant is an --at flag's instant (parseInstant); zero when not given.
type instant struct{ time.Time }

func (t *instant) String() string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

func (t *instant) Type() string { return "string" }

func (t *instant) Set(s string) (err error) {
	t.Time, err = parseInstant(s)
	return err
}

// parseInstant reads RFC 3339 (a space may stand for the T, as tables print
// an instant) or unix seconds, from 1970 to 9999.
func parseInstant(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > 253402300799 {
			return time.Time{}, usagef("--at %s is out of range for unix seconds", journal.Shown(s))
		}
		return time.Unix(n, 0).UTC(), nil
	}
	rfc := s
	if len(rfc) > 10 && rfc[10] == ' ' {
		rfc = rfc[:10] + "T" + rfc[11:]
	}
	t, err := time.Parse(time.RFC3339Nano, rfc)
	if err != nil {
		return time.Time{}, usagef("--at %s is neither RFC 3339 (2026-03-15T11:00:00Z, or with a space for the T as tables print it) nor unix seconds", journal.Quoted(s))
	}
	if t.Before(time.Unix(0, 0)) {
		return time.Time{}, usagef("--at %s is before 1970: out of range", journal.Shown(s))
	}
	return t.UTC(), nil
}

// flagError is the usage error for a flag cobra could not parse, in
// herald's words: the flag, the value and what the flag takes.
func flagError(c *cobra.Command, err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		var ne *pflag.NotExistError
		if errors.As(err, &ne) && ne.GetSpecifiedShortnames() != "" {
			err = fmt.Errorf("unknown shorthand flag: %q in -%s", ne.GetSpecifiedName(), journal.Shown(ne.GetSpecifiedShortnames()))
		} else if errors.As(err, &ne) && ne.GetSpecifiedName() != "" {
			err = fmt.Errorf("unknown flag: --%s", journal.Shown(ne.GetSpecifiedName())) // pflag's words, the name bounded
			if near := nearestFlag(c, ne.GetSpecifiedName()); near != "" {
				err = fmt.Errorf("%w; did you mean --%s?", err, near)
			}
		}
		return callError(err) // a flag herald does not have, or one without its value
	}
	if u := (usageError{}); errors.As(err, &u) {
		return u // the flag's own words (instant)
	}
	f, value := ive.GetFlag(), ive.GetValue()
	var want string
	switch t := f.Value.Type(); {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		rng := ""
		if v, ok := f.Value.(interface{ rangeWords() string }); ok {
			rng = ": it must be " + v.rangeWords()
		}
		if errors.Is(err, strconv.ErrRange) {
			// Say which way: "at least 1" reads as if the value were too small.
			way := "more than the largest number the flag holds"
			if strings.HasPrefix(strings.TrimSpace(value), "-") {
				way = "less than the smallest number the flag holds"
			}
			return usagef("--%s %s is out of range (%s)%s", f.Name, journal.Quoted(value), way, rng)
		}
		want = "a whole number" + rng
	case t == "duration":
		want = "a duration: a number with a unit, such as 500ms, 30s, 5m or 2h"
	case t == "bool":
		want = "true or false"
	default:
		return usageOf(err)
	}
	return usagef("--%s %s is not %s", f.Name, journal.Quoted(value), want)
}

func (v *intValue[T]) rangeWords() string { return v.words }

// nearestFlag is the flag of c (its own and those it inherits) whose name is
// fewest edits from name, if at most two (one for a short name), else "";
// a file's flag named with or without "-file" is nearest (register's
// --private-key-file is keys add's --private-key).
func nearestFlag(c *cobra.Command, name string) string {
	best, bestD := "", min(2, len(name)/3)
	visit := func(f *pflag.Flag) {
		d := editDistance(name, f.Name)
		if strings.TrimSuffix(name, "-file") == strings.TrimSuffix(f.Name, "-file") {
			d = 0
		}
		if d <= bestD && (best == "" || d < bestD || f.Name < best) {
			best, bestD = f.Name, d
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			diag, row[j] = row[j], min(row[j]+1, row[j-1]+1, diag+cost)
		}
	}
	return row[len(b)]
}
