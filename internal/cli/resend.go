package cli

import (
	"cmp"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/store"
)

// newResend returns resend: one record delivered again, out of band.
func newResend(e *env) command {
	var (
		stream, id, by string
		seq            uint64
		at             instant
	)
	return command{
		use:   "resend",
		short: "Deliver one record again to a registration, out of band, with its original id",
		long: `Queue record --seq, one the registration acknowledged (behind its cursor), to be
delivered to it once more: the next sweep of its namespace (a herald run on
this database: at once on PostgreSQL, within its --every on SQLite) sends it as the first
delivery was sent, with its original message id, signed anew. Its cursor, its
attempts and a pause or park stay as they are: a paused registration is resent
to, since you asked. The answer is written as a "resent" evidence row (herald
evidence); a failure is not retried: resend again. Asking for a record already
queued changes nothing: it says that resend stays and goes out once ("queued":
false in --json). A record not yet acknowledged is refused (it will be
delivered in order; rewind replays from a seq), as are one pruned and one of
a kind the registration does not want (register --kinds: it was passed
without a message, and a resend would send nothing).`,
		example: `  herald resend --stream orders/1001 --id billing --seq 2 --by alice`,
		need:    []string{"stream", "id", "seq"},
		db:      readDB,
		flags: func(f *pflag.FlagSet) {
			keyFlags(f, &stream, &id)
			atFlag(f, &at)
			intVar(f, &seq, "seq", 0, "the record to send again, behind the cursor (required)", "a seq, 1 or more", 0, 0)
			byFlag(f, &by, "who asks")
		},
		check: func(*call) error { return e.checkBy(&by, "") },
		run: func(c *call) error {
			v, err := operator.Resend(c.ctx(), c.b, stream, id, seq, c.at(at), by)
			if err != nil {
				return e.notFound(stream, id, err)
			}
			return c.print(v, func(w io.Writer) {
				if !v.Queued {
					fmt.Fprintf(w, "#%d is queued already to %s: that resend stays and goes out once, at the next sweep of %s; nothing changed.\n",
						seq, store.Name(stream, id), v.Namespace)
					return
				}
				fmt.Fprintf(w, "Queued a resend of #%d to %s for %s: the next sweep of %s sends it once, out of band; its cursor stays at %d.\n",
					seq, store.Name(stream, id), by, v.Namespace, v.NextSeq)
				fmt.Fprintf(w, "Its answer: %s --stream %s --id %s (event resent).\n", e.hint("evidence"), shellQuote(stream), shellQuote(id))
			})
		},
	}
}

// byFlag declares --by of pause, resume and resend: who acts.
func byFlag(f *pflag.FlagSet, by *string, who string) {
	f.StringVar(by, "by", "", who+", as shown in the evidence and the event (default: $USER, else operator)")
}

// checkBy defaults by to $USER, else "operator", and checks it with reason.
func (e *env) checkBy(by *string, reason string) error {
	*by = cmp.Or(*by, e.getenv("USER"), "operator")
	return usageOf(store.ValidatePause(*by, reason))
}
