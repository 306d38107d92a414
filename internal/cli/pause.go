package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/store"
)

// newPause returns pause (resume false) or resume: an operator's stop of a
// registration, and its end.
func newPause(e *env, resume bool) command {
	var (
		stream, id, by, reason string
		at                     instant
	)
	c := command{
		use:   "pause",
		short: "Stop delivering to a registration on purpose, until herald resume",
		long: `Stop delivering to a registration: it is never claimed until herald resume,
and a turn in flight loses its lease (what it sent is sent again). It shows as
paused, not parked, with who paused it and why in its evidence and last error,
and herald/events gets a herald.registration.paused record. Its cursor stays:
records wait, nothing is lost. Pausing a paused registration changes nothing.`,
		example: `  herald pause --stream orders --id billing --reason "billing's maintenance window"`,
	}
	if resume {
		c.use, c.short = "resume", "Resume a paused registration at its cursor"
		c.long = `Resume a paused registration (herald pause): it becomes due at --at (default
now), attempts reset, at its cursor; a failure park under the pause ends too.
Resuming one not paused changes nothing (herald unpark resumes a parked one).`
		c.example = `  herald resume --stream orders --id billing`
	}
	c.need, c.db = []string{"stream", "id"}, readDB
	c.flags = func(f *pflag.FlagSet) {
		keyFlags(f, &stream, &id)
		byFlag(f, &by, "who")
		if resume {
			atFlag(f, &at)
		} else {
			f.Var(&at, "at", "the instant the pause is dated (its evidence and event): RFC 3339 or unix seconds (default now; use the clock your sweeps use); it takes effect at once, whatever the instant (herald resume --at says when delivering starts again)")
			f.StringVar(&reason, "reason", "", "why, as shown in the evidence, the last error and the event")
		}
	}
	c.check = func(*call) error { return e.checkBy(&by, reason) }
	c.run = func(c *call) error {
		v, err := operator.Pause(c.ctx(), c.b, stream, id, resume, c.at(at), by, reason)
		if err != nil {
			return e.notFound(stream, id, err)
		}
		return c.print(v, func(w io.Writer) {
			switch {
			case !v.Changed && resume:
				fmt.Fprintf(w, "%s was not paused; nothing changed.\n", store.Name(stream, id))
			case !v.Changed:
				fmt.Fprintf(w, "%s was already paused; nothing changed.\n", store.Name(stream, id))
			case resume:
				fmt.Fprintf(w, "Resumed %s: %s.\n", store.Name(stream, id), e.resumed(v.RegistrationView))
			case at.After(time.Now()): // an --at ahead of the clock dates it; it is paused now
				fmt.Fprintf(w, "Paused %s at cursor %d, at once (dated %s): herald resume delivers again.\n", store.Name(stream, id), v.NextSeq, operator.Instant(at.Time))
			default:
				fmt.Fprintf(w, "Paused %s at cursor %d: herald resume delivers again.\n", store.Name(stream, id), v.NextSeq)
			}
		})
	}
	return c
}
