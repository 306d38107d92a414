package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// keyFlags declares --stream and --id, which name one registration.
func keyFlags(f *pflag.FlagSet, stream, id *string) {
	f.StringVar(stream, "stream", "", "the registration's stream (required)")
	f.StringVar(id, "id", "", "the registration's id (required)")
}

// atFlag declares --at of an action: the instant from which it is due.
func atFlag(f *pflag.FlagSet, at *instant) {
	f.Var(at, "at", "the action's instant, from which the registration is due: RFC 3339 or unix seconds (default now; use the clock your sweeps use)")
}

// notFound words journal.ErrNotFound for a registration, with where to look;
// a stream or id no registration can have is refused as the HTTP API
// refuses it (journal's rules), naming --stream or --id.
func (e *env) notFound(stream, id string, err error) error {
	if !errors.Is(err, journal.ErrNotFound) {
		return err
	}
	if err := cmp.Or(journal.ValidateStream(stream), journal.ValidateID("id", id)); err != nil {
		return err
	}
	return fmt.Errorf("no registration %s: %w (%s --stream %s lists the stream's)",
		store.Name(stream, id), journal.ErrNotFound, e.hint("registrations"), shellQuote(stream))
}

// due words when a registration made due at t is: now, or from t when an
// --at ahead of the clock put it there.
func (e *env) due(t time.Time) string {
	if t.After(time.Now()) {
		return "due from " + operator.Instant(t)
	}
	return "due now"
}

// resumed words where v, just made due, stands and when it is sent: as due
// says, or, held for its host, at the host's next probe (its answer, or
// herald hosts reset, releases it).
func (e *env) resumed(v operator.RegistrationView) string {
	at := fmt.Sprintf("at cursor %d (%s to deliver)", v.NextSeq, plural(int(v.Lag), "record"))
	if v.State == operator.StateHeld {
		return fmt.Sprintf("%s, held for host %s (%s) until its next probe at %s", at, v.Host, v.HeldFor, operator.Instant(v.HostNextProbeAt))
	}
	return e.due(v.NextAttemptAt) + " " + at
}

func newUnpark(e *env) command {
	var (
		stream, id, namespace string
		all                   bool
		at                    instant
		q                     store.ListQuery
	)
	return command{
		use:   "unpark",
		short: "Resume a parked registration at its cursor (or every parked one, with --all)",
		long: `Resume a parked registration: it becomes due at once, with its attempts reset,
and the next sweep sends the first record it has not had acknowledged. Nothing
was lost while it was parked. Unparking an active registration changes nothing.

With --all instead of --id, every parked registration is resumed (of --stream
and of --namespace, when given), each with its own evidence: after a
misconfiguration parked many, fix it first, then unpark them at once.`,
		example: `  herald unpark --stream actor/alice --id https://remote.example/inbox
  herald unpark --all --namespace webhook`,
		db: readDB,
		flags: func(f *pflag.FlagSet) {
			keyFlags(f, &stream, &id)
			atFlag(f, &at)
			f.BoolVar(&all, "all", false, "every parked registration (of --stream and --namespace, when given) instead of one --id")
			f.StringVar(&namespace, "namespace", "", "with --all: only this namespace's")
			f.Lookup("stream").Usage = "the registration's stream (required with --id; with --all, only this stream's)"
			f.Lookup("id").Usage = "the registration's id (required, unless --all)"
		},
		check: func(c *call) (err error) {
			switch {
			case all && c.changed("id"):
				return usagef("unpark takes --id or --all, not both")
			case all && namespace != "" && checkNamespace(namespace) != nil:
				return checkNamespace(namespace)
			case all:
				q, err = operator.UnparkAllQuery(stream, namespace, c.changed)
				return usageOf(err)
			case namespace != "":
				return usagef("--namespace applies to unpark --all")
			case !c.changed("id"):
				return callf("unpark needs --id, or --all for every parked registration (of --stream, when given)")
			}
			return c.need("stream", "id")
		},
		run: func(c *call) error {
			if all { // each unparked is named, those before a failure too (in --json as well), then the failure
				when := c.at(at)
				out, err := operator.UnparkAll(c.ctx(), c.b, q, when)
				perr := c.print(out, func(w io.Writer) {
					held := 0
					for _, v := range out.Unparked {
						fmt.Fprintf(w, "Unparked %s: %s.\n", store.Name(v.Stream, v.ID), e.resumed(v))
						if v.State == operator.StateHeld {
							held++
						}
					}
					switch {
					case err != nil:
					case len(out.Unparked) == 0:
						fmt.Fprintln(w, "No parked registration matched; nothing changed.")
					case held > 0:
						fmt.Fprintf(w, "%s unparked: %d held for their hosts until their next probes, the others %s.\n",
							plural(len(out.Unparked), "registration"), held, c.due(when))
					default:
						fmt.Fprintf(w, "%s unparked, %s.\n", plural(len(out.Unparked), "registration"), c.due(when))
					}
				})
				return cmp.Or(err, perr)
			}
			v, err := operator.Unpark(c.ctx(), c.b, stream, id, c.at(at))
			if err != nil {
				return e.notFound(stream, id, err)
			}
			return c.print(map[string]any{"was_parked": v.WasParked, "registration": v.RegistrationView}, func(w io.Writer) {
				if !v.WasParked {
					fmt.Fprintf(w, "%s was not parked; nothing changed.\n", store.Name(stream, id))
				} else {
					fmt.Fprintf(w, "Unparked %s: %s.\n", store.Name(stream, id), e.resumed(v.RegistrationView))
				}
			})
		},
	}
}

func newSkip(e *env) command {
	var (
		stream, id, reason string
		toSeq              uint64
		at                 instant
	)
	return command{
		use:   "skip",
		short: "Move a registration's cursor forward, past a poison record",
		long: `Move a registration's cursor forward to --to-seq, so the records before it are
never sent to this receiver (the journal keeps them; rewind replays them). Use it
for a record the receiver will never accept. It writes evidence with --reason.
A parked registration stays parked: unpark it afterwards.`,
		example: `  herald skip --stream actor/alice --id https://remote.example/inbox --to-seq 8 --reason "record 7 is malformed"`,
		need:    []string{"stream", "id", "to-seq"},
		db:      readDB,
		flags: func(f *pflag.FlagSet) {
			moveFlags(f, &stream, &id, &at, &toSeq, "the new cursor: the first seq to deliver (required)")
			f.StringVar(&reason, "reason", "skipped by an operator", "why, for the evidence")
		},
		run: func(c *call) error {
			return move(c, stream, id, toSeq, func() error { return c.b.Skip(c.ctx(), stream, id, toSeq, c.at(at), reason) })
		},
	}
}

func newRewind(e *env) command {
	var (
		stream, id string
		toSeq      uint64
		at         instant
	)
	return command{
		use:   "rewind",
		short: "Move a registration's cursor back, to replay history to its receiver",
		long: `Move a registration's cursor back to --to-seq (1 is the stream's beginning), so
the next sweeps send those records again, in order, with their original message
ids. The one way a cursor moves backwards; --to-seq past the cursor is refused
(moving forward is herald skip, which records why). --to-seq at the cursor
retries it at once. It writes evidence ("rewound from #N to #M").`,
		example: `  herald rewind --stream task/8f3c --id push-1 --to-seq 1`,
		need:    []string{"stream", "id", "to-seq"},
		db:      readDB,
		flags: func(f *pflag.FlagSet) {
			moveFlags(f, &stream, &id, &at, &toSeq, "the new cursor: the first seq to deliver again (required)")
		},
		run: func(c *call) error {
			return move(c, stream, id, toSeq, func() error { return c.b.Rewind(c.ctx(), stream, id, toSeq, c.at(at)) })
		},
	}
}

func moveFlags(f *pflag.FlagSet, stream, id *string, at *instant, toSeq *uint64, usage string) {
	keyFlags(f, stream, id)
	atFlag(f, at)
	intVar(f, toSeq, "to-seq", 0, usage, "a seq, 1 or more", 0, 0)
}

// move runs an operator's move of a cursor and prints it.
func move(c *call, stream, id string, toSeq uint64, do func() error) error {
	before, err := c.b.Get(c.ctx(), stream, id)
	if err != nil {
		return c.notFound(stream, id, err)
	}
	if err := do(); err != nil {
		return err
	}
	after, err := c.b.Get(c.ctx(), stream, id)
	if err != nil {
		return err
	}
	return c.print(map[string]any{"from_seq": before.NextSeq, "to_seq": toSeq, "registration": operator.Held(nil).View(after)}, func(w io.Writer) {
		fmt.Fprintf(w, "%s: cursor %d → %d (head %d, lag %d).\n", store.Name(stream, id), before.NextSeq, after.NextSeq, after.Head, after.Lag())
		stillParked(w, after)
	})
}

// stillParked tells that st, just changed, is still parked or paused, and
// the command that resumes it: unpark leaves a pause alone.
func stillParked(w io.Writer, st store.Status) {
	switch {
	case st.Paused:
		fmt.Fprintln(w, "It is still paused: herald resume resumes it.")
	case st.Parked:
		fmt.Fprintln(w, "It is still parked: herald unpark resumes it.")
	}
}

func newEvidence(e *env) command {
	var (
		stream, id string
		limit      int
	)
	return command{
		use:   "evidence",
		short: "Show why a registration failed, was skipped or parked, newest first",
		long: fmt.Sprintf(`Show a registration's evidence, newest first: failed attempts (status, the first
%d bytes of the answer, duration, error, next attempt), skipped messages, the
failure that parked it, and operators' unpark, skip and rewind; the newest %d
are kept. The table cuts the body; --json shows every field whole. A receiver's
Retry-After is shown as the wait herald keeps (clamped to 1s..--max-retry-after)
beside what the receiver asked; in --json the error keeps the receiver's value
and not_before is the next attempt.`, store.MaxEvidenceBody, store.MaxEvidence),
		example: `  herald evidence --stream actor/alice --id https://remote.example/inbox
  herald evidence --stream task/8f3c --id push-1 --json`,
		need: []string{"stream", "id"},
		db:   readDB,
		flags: func(f *pflag.FlagSet) {
			keyFlags(f, &stream, &id)
			intVar(f, &limit, "limit", 20, fmt.Sprintf("at most this many rows (up to %d)", store.MaxEvidence), fmt.Sprintf("from 1 to %d", store.MaxEvidence), 1, store.MaxEvidence)
		},
		run: func(c *call) error {
			evs, err := operator.Evidence(c.ctx(), c.b, stream, id, min(limit+1, store.MaxEvidence)) // one more: are older rows kept?
			if err != nil {
				return e.notFound(stream, id, err)
			}
			older := len(evs) > limit
			evs = evs[:min(len(evs), limit)]
			return c.print(evs, func(w io.Writer) {
				t := tbl.New(w, "AT", "EVENT", "SEQ", "ATTEMPT", "STATUS", "DURATION", "NEXT ATTEMPT", "BODY", "ERROR OR REASON")
				for _, ev := range evs {
					status, dur, note := "-", "-", retryAfterNote(ev)
					if ev.Status != 0 {
						status = fmt.Sprint(ev.Status)
					}
					if ev.Duration > 0 {
						dur = tbl.Duration(ev.Duration)
					}
					if ev.Location != "" {
						note += " (redirect to " + ev.Location + ", not followed)"
					}
					t.Row(operator.Instant(ev.At), ev.Event, fmt.Sprint(ev.Seq), fmt.Sprint(ev.Attempt), status, dur, operator.Instant(ev.NotBefore), ev.Body, note)
				}
				if t.Flush(); older {
					fmt.Fprintf(w, "Older evidence is kept: %s --stream %s --id %s --limit %d shows up to the %d kept.\n",
						e.hint("evidence"), shellQuote(stream), shellQuote(id), store.MaxEvidence, store.MaxEvidence)
				}
			})
		},
	}
}

// retryAfterNote is the evidence's error with the receiver's "; Retry-After
// D" told as the wait herald keeps, clamped to [1 s, --max-retry-after]:
// "503 Service Unavailable; retry after 1h (capped; the receiver asked 30d)".
func retryAfterNote(ev store.Evidence) string {
	const suffix = "; Retry-After "
	i := strings.LastIndex(ev.Error, suffix)
	if i < 0 || ev.NotBefore.IsZero() {
		return ev.Error
	}
	asked, err := time.ParseDuration(ev.Error[i+len(suffix):])
	if err != nil {
		return ev.Error
	}
	waits := ev.NotBefore.Sub(ev.At)
	why := "as the receiver asked"
	switch {
	case waits < asked:
		why = "capped; the receiver asked " + store.FormatDays(asked)
	case waits > asked:
		why = "at least 1s; the receiver asked " + store.FormatDays(asked)
	}
	return ev.Error[:i] + "; retry after " + store.FormatDays(waits) + " (" + why + ")"
}

func newUnregister(e *env) command {
	var stream, id, prefix string
	return command{
		use:   "unregister",
		short: "Remove a registration and its evidence; the journal keeps every record",
		long: `Remove a registration: its receiver gets nothing more, and its cursor, retry
state and evidence are deleted. The journal is not touched. It prints the
cursor it had, so that register --from-seq can bring it back where it was.
With --stream-prefix instead of --stream, remove the subscription and every
registration it made (herald subscriptions lists them).`,
		example: `  herald unregister --stream orders/1001 --id billing
  herald unregister --stream-prefix tenant/42/ --id tenant-42`,
		need: []string{"id"},
		db:   readDB,
		flags: func(f *pflag.FlagSet) {
			keyFlags(f, &stream, &id)
			f.StringVar(&prefix, "stream-prefix", "", "remove the subscription of this prefix (instead of --stream)")
		},
		check: func(c *call) error {
			if c.changed("stream") && c.changed("stream-prefix") {
				return usagef("--stream and --stream-prefix: give one")
			}
			if c.changed("stream-prefix") {
				return nil
			}
			return c.need("stream")
		},
		run: func(c *call) error {
			if prefix != "" {
				n, err := c.b.Unsubscribe(c.ctx(), prefix, id)
				if err != nil {
					return err
				}
				return c.print(map[string]any{"unsubscribed": map[string]any{"stream_prefix": prefix, "id": id, "registrations": n}}, func(w io.Writer) {
					fmt.Fprintf(w, "Unsubscribed %s: %s removed, with their evidence.\n", store.SubscriptionName(prefix, id), plural(n, "registration"))
				})
			}
			before, err := c.b.Get(c.ctx(), stream, id)
			if err != nil {
				return e.notFound(stream, id, err)
			}
			if err := c.b.Unregister(c.ctx(), stream, id); err != nil {
				return err
			}
			return c.print(map[string]any{"unregistered": operator.Held(nil).View(before)}, func(w io.Writer) {
				fmt.Fprintf(w, "Unregistered %s (%s to %s) at cursor %d, with %s not delivered; its evidence is deleted.\n",
					store.Name(stream, id), before.Namespace, before.Host(), before.NextSeq, plural(int(before.Lag()), "record"))
				if before.Subscription == "" {
					fmt.Fprintf(w, "To bring it back there: %s\n", registerAgain(e, before))
					return
				}
				fmt.Fprintf(w, "It was made by the subscription %s, which no longer follows this stream: register the prefix again to have it made anew (where the subscription's --from says), or, to resume at this cursor apart from the subscription: %s\n",
					store.SubscriptionName(before.Subscription, id), registerAgain(e, before))
			})
		},
	}
}

// registerAgain is the command that registers s again as it was, but for
// what is never shown (a redacted URL, the config), left to fill in.
func registerAgain(e *env, s store.Status) string {
	again := []string{e.hint("register"), "--stream", shellQuote(s.Stream), "--id", shellQuote(s.ID), "--namespace", s.Namespace, "--url", "…"}
	if operator.RedactURL(s.URL) == s.URL {
		again[len(again)-1] = shellQuote(s.URL)
	}
	if s.OnRejected != "" {
		again = append(again, "--on-4xx", shellQuote(string(s.OnRejected)))
	}
	if len(s.Kinds) > 0 {
		again = append(again, "--kinds", shellQuote(strings.Join(s.Kinds, ",")))
	}
	if s.Window > 1 {
		again = append(again, "--window", fmt.Sprint(s.Window))
	}
	if s.RetainMax > 0 {
		again = append(again, "--retain-max", store.FormatDays(s.RetainMax))
	}
	if !s.Rate.IsZero() {
		again = append(again, "--rate", s.Rate.String())
	}
	again = append(again, "--from-seq", fmt.Sprint(s.NextSeq))
	line := strings.Join(again, " ")
	if flags := namespaces[s.Namespace].flags(); len(flags) > 0 {
		line += fmt.Sprintf(", with its --%s as registered", strings.Join(flags, ", --"))
	}
	return line
}

func newSubscriptions(e *env) command {
	var (
		prefix  string
		streams bool
	)
	return command{
		use:   "subscriptions",
		short: "List subscriptions by stream prefix: each one, the streams it follows, and with --streams their cursors",
		long: `List the subscriptions (herald register --stream-prefix): each as one row
with the count of the streams it follows; --streams adds each stream's
registration (its cursor, head, lag and state) and the streams it skipped
(each holds a registration of its id that it did not make).`,
		example: `  herald subscriptions
  herald subscriptions --stream-prefix tenant/42/ --streams`,
		db: readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&prefix, "stream-prefix", "", "only this prefix's")
			f.BoolVar(&streams, "streams", false, "list each stream's registration too")
		},
		run: func(c *call) error {
			list, err := operator.Subscriptions(c.ctx(), c.b, prefix, streams)
			if err != nil {
				return err
			}
			return c.print(list, func(w io.Writer) {
				if len(list) == 0 {
					fmt.Fprintln(w, "No subscriptions.")
					return
				}
				t := tbl.New(w, "PREFIX", "ID", "NAMESPACE", "HOST", "FROM", "RETAIN-MAX", "STREAMS")
				for _, s := range list {
					t.Row(s.Prefix, s.ID, s.Namespace, s.Host, s.From, s.RetainMax, fmt.Sprint(s.Streams))
				}
				t.Flush()
				for _, s := range list {
					if !streams || len(s.Registrations) == 0 && s.SkippedStreams == 0 {
						continue
					}
					fmt.Fprintf(w, "\n%s:\n", store.SubscriptionName(s.Prefix, s.ID))
					if len(s.Registrations) > 0 {
						t := tbl.New(w, "STREAM", "CURSOR", "HEAD", "LAG", "STATE")
						for _, r := range s.Registrations {
							t.Row(r.Stream, fmt.Sprint(r.NextSeq), fmt.Sprint(r.Head), fmt.Sprint(r.Lag), r.State)
						}
						t.Flush()
					}
					printSkipped(w, s)
				}
			})
		},
	}
}
