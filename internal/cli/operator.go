package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// key is the --stream/--id pair that names one registration, and the
// instant of the operator's action.
type key struct{ stream, id, at string }

func (k *key) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&k.stream, "stream", "", "the registration's stream (required)")
	cmd.Flags().StringVar(&k.id, "id", "", "the registration's id (required)")
}

// atFlag adds --at to a command that changes a registration: the instant it
// becomes due (keep it on the clock your sweeps use with sweep --at).
func (k *key) atFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&k.at, "at", "", "the action's instant, from which the registration is due: RFC 3339 or unix seconds (default now; use the clock your sweeps use)")
}

// notFound words a store's journal.ErrNotFound for this registration as
// every command names one (stream=… id=…, never the ambiguous stream/id),
// with where to look; other errors are kept. It still wraps ErrNotFound
// (exit 2).
func (k key) notFound(e *env, err error) error {
	if !errors.Is(err, journal.ErrNotFound) {
		return err
	}
	return fmt.Errorf("no registration %s: %w (%s --stream %s lists the stream's)",
		push.Name(k.stream, k.id), journal.ErrNotFound, e.command("registrations"), shellQuote(k.stream))
}

// due words when a registration made due at t is: now, or from t when an
// --at ahead of the clock put it there.
func (e *env) due(t time.Time) string {
	if t.After(e.now()) {
		return "due from " + fmtTime(t)
	}
	return "due now"
}

func (k *key) instant(e *env) (time.Time, error) {
	if k.at == "" {
		return e.now(), nil
	}
	return parseInstant(k.at)
}

func newUnpark(e *env) *cobra.Command {
	var (
		k         key
		all       bool
		namespace string
	)
	cmd := &cobra.Command{
		Use:   "unpark",
		Short: "Resume a parked registration at its cursor (or every parked one, with --all)",
		Long: `Resume a parked registration: it becomes due at once, with its attempts reset,
and the next sweep sends the first record it has not had acknowledged. Nothing
was lost while it was parked. Unparking an active registration changes nothing.

With --all instead of --id, every parked registration is resumed (of --stream
and of --namespace, when given), each with its own evidence, and each is named:
after a misconfiguration parked many (a daemon started without the network
options its receivers need), fix it first, then unpark them at once.`,
		Example: `  herald unpark --stream actor/alice --id https://remote.example/inbox
  herald unpark --all --namespace webhook`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all {
				if cmd.Flags().Changed("id") {
					return usagef("unpark takes --id or --all, not both")
				}
				for _, name := range []string{"stream", "namespace"} {
					// An empty value (an unset variable in a script) would
					// otherwise unpark every stream's or namespace's.
					if f := cmd.Flags().Lookup(name); f.Changed && f.Value.String() == "" {
						return usagef("--%s is empty; leave it out to unpark every %s's; nothing was unparked", name, name)
					}
				}
				if namespace != "" {
					if err := checkNamespace(namespace); err != nil {
						return err
					}
				}
				if k.stream != "" {
					if err := checkStream(k.stream); err != nil {
						return err
					}
				}
			} else {
				if namespace != "" {
					return usagef("--namespace applies to unpark --all")
				}
				if !cmd.Flags().Changed("id") {
					return usagef("unpark needs --id, or --all for every parked registration (of --stream, when given)")
				}
				if err := required(cmd, "stream", "id"); err != nil {
					return err
				}
			}
			at, err := k.instant(e)
			if err != nil {
				return err
			}
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			if all {
				return unparkAll(cmd, e, b, at, push.ListQuery{Stream: k.stream, Namespace: namespace, Parked: true})
			}
			before, err := b.Get(cmd.Context(), k.stream, k.id)
			if err != nil {
				return k.notFound(e, err)
			}
			if err := b.Unpark(cmd.Context(), k.stream, k.id, at); err != nil {
				return err
			}
			after, err := b.Get(cmd.Context(), k.stream, k.id)
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.Out, map[string]any{"was_parked": before.Parked, "registration": operator.Held(nil).View(after)})
			}
			if !before.Parked {
				fmt.Fprintf(e.Out, "%s was not parked; nothing changed.\n", push.Name(k.stream, k.id))
				return nil
			}
			fmt.Fprintf(e.Out, "Unparked %s: %s at cursor %d (%s to deliver).\n", push.Name(k.stream, k.id), e.due(after.NextAttemptAt), after.NextSeq, plural(int(after.Lag()), "record"))
			return nil
		},
	}
	k.flags(cmd)
	k.atFlag(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "every parked registration (of --stream and --namespace, when given) instead of one --id")
	cmd.Flags().StringVar(&namespace, "namespace", "", "with --all: only this namespace's")
	cmd.Flags().Lookup("stream").Usage = "the registration's stream (required; with --all, only this stream's)"
	cmd.Flags().Lookup("id").Usage = "the registration's id (required, unless --all)"
	return cmd
}

// unparkAll is unpark --all (push.UnparkAll): it names each registration
// unparked, those before a failure part way included (in --json too, as
// the APIs do), then the failure.
func unparkAll(cmd *cobra.Command, e *env, b backend, at time.Time, q push.ListQuery) error {
	done, err := push.UnparkAll(cmd.Context(), b, q, at)
	unparked := []operator.RegistrationView{}
	for _, st := range done {
		unparked = append(unparked, operator.Held(nil).View(st))
		if !e.json {
			fmt.Fprintf(e.Out, "Unparked %s: cursor %d (%s to deliver).\n", push.Name(st.Stream, st.ID), st.NextSeq, plural(int(st.Lag()), "record"))
		}
	}
	if err != nil {
		if e.json {
			_ = printJSON(e.Out, map[string]any{"unparked": unparked})
		}
		return err
	}
	if e.json {
		return printJSON(e.Out, map[string]any{"unparked": unparked})
	}
	switch len(unparked) {
	case 0:
		fmt.Fprintln(e.Out, "No parked registration matched; nothing changed.")
	default:
		fmt.Fprintf(e.Out, "%s unparked, %s.\n", plural(len(unparked), "registration"), e.due(at))
	}
	return nil
}

func newSkip(e *env) *cobra.Command {
	var (
		k      key
		toSeq  uint64
		reason string
	)
	cmd := &cobra.Command{
		Use:   "skip",
		Short: "Move a registration's cursor forward, past a poison record",
		Long: `Move a registration's cursor forward to --to-seq, so the records before it are
never sent to this receiver (the journal keeps them; rewind replays them). Use it
for a record the receiver will never accept. It writes evidence with --reason.
A parked registration stays parked: unpark it afterwards.`,
		Example: `  herald skip --stream actor/alice --id https://remote.example/inbox --to-seq 8 --reason "record 7 is malformed"`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "stream", "id", "to-seq"); err != nil {
				return err
			}
			if err := checkReason(reason); err != nil {
				return err
			}
			return e.move(cmd, k, toSeq, func(b backend, at time.Time) error {
				return b.Skip(cmd.Context(), k.stream, k.id, toSeq, at, reason)
			})
		},
	}
	k.flags(cmd)
	k.atFlag(cmd)
	cmd.Flags().Uint64Var(&toSeq, "to-seq", 0, "the new cursor: the first seq to deliver (required)")
	intRange(cmd, "to-seq", "a seq, 1 or more")
	cmd.Flags().StringVar(&reason, "reason", "skipped by an operator", "why, for the evidence")
	return cmd
}

func newRewind(e *env) *cobra.Command {
	var (
		k     key
		toSeq uint64
	)
	cmd := &cobra.Command{
		Use:   "rewind",
		Short: "Move a registration's cursor back, to replay history to its receiver",
		Long: `Move a registration's cursor back to --to-seq (1 is the stream's beginning), so
the next sweeps send those records again, in order, with their original message
ids. The one way a cursor moves backwards; --to-seq past the cursor is refused
(moving forward is herald skip, which records why). --to-seq at the cursor
retries it at once. It writes evidence ("rewound from #N to #M").`,
		Example: `  herald rewind --stream task/8f3c --id push-1 --to-seq 1`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "stream", "id", "to-seq"); err != nil {
				return err
			}
			return e.move(cmd, k, toSeq, func(b backend, at time.Time) error {
				return b.Rewind(cmd.Context(), k.stream, k.id, toSeq, at)
			})
		},
	}
	k.flags(cmd)
	k.atFlag(cmd)
	cmd.Flags().Uint64Var(&toSeq, "to-seq", 0, "the new cursor: the first seq to deliver again (required)")
	intRange(cmd, "to-seq", "a seq, 1 or more")
	return cmd
}

// move runs an operator's cursor move and prints before and after.
func (e *env) move(cmd *cobra.Command, k key, toSeq uint64, do func(backend, time.Time) error) error {
	at, err := k.instant(e)
	if err != nil {
		return err
	}
	b, err := e.openExisting(cmd.Context())
	if err != nil {
		return err
	}
	defer b.Close()
	before, err := b.Get(cmd.Context(), k.stream, k.id)
	if err != nil {
		return k.notFound(e, err)
	}
	if err := do(b, at); err != nil {
		return asFlags(err)
	}
	after, err := b.Get(cmd.Context(), k.stream, k.id)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.Out, map[string]any{"from_seq": before.NextSeq, "to_seq": toSeq, "registration": operator.Held(nil).View(after)})
	}
	fmt.Fprintf(e.Out, "%s: cursor %d → %d (head %d, lag %d).\n", push.Name(k.stream, k.id), before.NextSeq, after.NextSeq, after.Head, after.Lag())
	if after.Parked {
		fmt.Fprintln(e.Out, "It is still parked: run herald unpark to resume deliveries.")
	}
	return nil
}

func newEvidence(e *env) *cobra.Command {
	var (
		k     key
		limit int
	)
	cmd := &cobra.Command{
		Use:   "evidence",
		Short: "Show why a registration failed, was skipped or parked, newest first",
		Long: fmt.Sprintf(`Show a registration's evidence, newest first: failed attempts (status, the first
%d bytes of the answer, duration, error, next attempt), skipped messages, the
failure that parked it, and operators' unpark, skip and rewind. The newest %d
rows are kept per registration; when --limit hides older ones, the table says
so. The table shows the error whole and cuts the
body; --json shows every field whole. A receiver's Retry-After is shown as the
wait herald keeps (clamped to 1s..--max-retry-after of the sweep) beside what
the receiver asked; in --json the error keeps the receiver's value and
not_before is the next attempt.`, push.MaxEvidenceBody, push.MaxEvidence),
		Example: `  herald evidence --stream actor/alice --id https://remote.example/inbox
  herald evidence --stream task/8f3c --id push-1 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "stream", "id"); err != nil {
				return err
			}
			if limit < 1 || limit > push.MaxEvidence {
				return usagef("--limit %d must be from 1 to %d", limit, push.MaxEvidence)
			}
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			ask := limit // one more, to say when older rows are kept
			if limit < push.MaxEvidence {
				ask = limit + 1
			}
			evs, err := b.Evidence(cmd.Context(), k.stream, k.id, ask)
			if err != nil {
				return k.notFound(e, err)
			}
			older := len(evs) > limit
			evs = evs[:min(len(evs), limit)]
			if e.json {
				if evs == nil {
					evs = []push.Evidence{}
				}
				return printJSON(e.Out, evs)
			}
			t := newTable(e.Out, "AT", "EVENT", "SEQ", "ATTEMPT", "STATUS", "DURATION", "NEXT ATTEMPT", "BODY", "ERROR OR REASON")
			for _, ev := range evs {
				status := "-"
				if ev.Status != 0 {
					status = fmt.Sprint(ev.Status)
				}
				dur := "-"
				if ev.Duration > 0 {
					dur = tbl.Duration(ev.Duration)
				}
				t.row(fmtTime(ev.At), ev.Event, fmt.Sprint(ev.Seq), fmt.Sprint(ev.Attempt), status, dur,
					fmtTime(ev.NotBefore), ev.Body, retryAfterNote(ev)+locationNote(ev.Location))
			}
			if err := t.flush(); err != nil || !older {
				return err
			}
			_, err = fmt.Fprintf(e.Out, "Older evidence is kept: %s --stream %s --id %s --limit %d shows up to the %d kept.\n",
				e.command("evidence"), shellQuote(k.stream), shellQuote(k.id), push.MaxEvidence, push.MaxEvidence)
			return err
		},
	}
	k.flags(cmd)
	cmd.Flags().IntVar(&limit, "limit", 20, fmt.Sprintf("at most this many rows (up to %d)", push.MaxEvidence))
	intRange(cmd, "limit", fmt.Sprintf("from 1 to %d", push.MaxEvidence))
	return cmd
}

// retryAfterNote is the evidence's error with its "; Retry-After D" (the
// delay the receiver asked for, as transport words it) replaced by what
// herald does: the wait from the attempt to its next one, which the worker
// clamped to [1 s, --max-retry-after]. "503 Service Unavailable; Retry-After
// 720h0m0s" becomes "503 Service Unavailable; retry after 1h (capped; the
// receiver asked 30d)". Other errors are kept as they are.
func retryAfterNote(ev push.Evidence) string {
	i := strings.LastIndex(ev.Error, retryAfterSuffix)
	if i < 0 || ev.NotBefore.IsZero() {
		return ev.Error
	}
	asked, err := time.ParseDuration(ev.Error[i+len(retryAfterSuffix):])
	if err != nil {
		return ev.Error
	}
	waits := ev.NotBefore.Sub(ev.At)
	var why string
	switch {
	case waits < asked:
		why = "capped; the receiver asked " + fmtDelay(asked)
	case waits > asked:
		why = "at least 1s; the receiver asked " + fmtDelay(asked)
	default:
		why = "as the receiver asked"
	}
	return ev.Error[:i] + "; retry after " + fmtDelay(waits) + " (" + why + ")"
}

// retryAfterSuffix ends the reason of an answer with a Retry-After (transport).
const retryAfterSuffix = "; Retry-After "

// fmtDelay writes d as a person reads a delay: whole days as "30d", else
// time.Duration's form without its zero parts ("1h", "2m", "1h30m", "45s").
func fmtDelay(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func locationNote(loc string) string {
	if loc == "" {
		return ""
	}
	return " (redirect to " + operator.RedactURL(loc) + ", not followed)"
}

// checkReason refuses a skip's --reason that the evidence would cut
// (longer than push.MaxEvidenceError bytes) or that holds a control
// character, which every listing of evidence would have to hide.
func checkReason(reason string) error {
	return journal.ValidateText("--reason", reason, push.MaxEvidenceError)
}
