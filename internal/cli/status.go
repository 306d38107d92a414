package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// refusedLister is store/postgres, whose sequencer refuses a record that
// raced its stream's final record.
type refusedLister interface {
	Refused(ctx context.Context, stream string, limit int) ([]postgres.RefusedRecord, error)
}

// refusedShown is how many refused records herald status lists.
const refusedShown = 20

type refusedView struct {
	Stream     string `json:"stream"`
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	AppendedAt string `json:"appended_at"`
	Reason     string `json:"reason"`
}

func newStatus(e *env) command {
	return command{
		use:   "status",
		short: "Counts by namespace and state, the largest lags, the oldest parked registration, refused records",
		long: fmt.Sprintf(`Count each namespace's registrations by state: ready (work, due), retrying
(failures at the cursor, waiting), held (work on a host that is down or
unavailable: herald hosts), idle (caught up) and parked, with how many hold a
live lease and the records behind their cursors, and the records committed but
not yet numbered (PostgreSQL: the sequencer of herald run numbers them, so
a count that stays says no daemon runs). Then the largest lags, the
registration parked longest, refused records (PostgreSQL) and the hosts that
are not up. --json has the same, by those names; held ones are not in ready or
retrying, and held_truncated is true when only the first %d registrations with
work were read to count them.`, operator.MaxHeldScan),
		example: `  herald status
  herald status --json`,
		db: readDB,
		run: func(c *call) error {
			now := time.Now()
			st, err := operator.StatusAt(c.ctx(), c.b, now)
			if err != nil {
				return err
			}
			refused := []refusedView{}
			if rl, ok := c.b.(refusedLister); ok {
				recs, err := rl.Refused(c.ctx(), "", refusedShown)
				if err != nil {
					return err
				}
				for _, r := range recs {
					refused = append(refused, refusedView{r.Stream, r.ID, r.Kind, operator.Instant(r.AppendedAt), r.Reason})
				}
			}
			out := struct {
				operator.Status
				Refused []refusedView `json:"refused"`
			}{st, refused}
			return c.print(out, func(w io.Writer) {
				t := tbl.New(w, "NAMESPACE", "READY", "RETRYING", "HELD", "IDLE", "PARKED", "PAUSED", "LEASED", "RECORDS BEHIND")
				for _, n := range st.Names() {
					v := st.Namespaces[n]
					t.Row(n, fmt.Sprint(v.Ready), fmt.Sprint(v.Retrying), fmt.Sprint(v.Held), fmt.Sprint(v.Idle), fmt.Sprint(v.Parked), fmt.Sprint(v.Paused), fmt.Sprint(v.Leased), fmt.Sprint(v.Behind))
				}
				t.Flush()
				if st.HeldTruncated {
					fmt.Fprintf(w, "(HELD counts the first %d registrations with work only; herald hosts counts each host's)\n", operator.MaxHeldScan)
				}
				if note := operator.UnnumberedNote(st.Unnumbered, now, "is a daemon running? (herald run numbers them, as does herald sweep)"); note != "" {
					fmt.Fprintf(w, "\nNot yet in RECORDS BEHIND: %s.\n", note)
				}
				if len(refused) > 0 {
					fmt.Fprintf(w, "\nRefused records (committed after their stream's final record; kept, never delivered; first %d):\n", refusedShown)
					t := tbl.New(w, "STREAM", "ID", "KIND", "APPENDED", "REASON")
					for _, r := range refused {
						t.Row(tbl.Cell(r.Stream), tbl.Cell(r.ID), tbl.Cell(r.Kind), r.AppendedAt, tbl.Cell(r.Reason))
					}
					t.Flush()
				}
				if len(st.Namespaces) == 0 {
					fmt.Fprintln(w, "No registrations.")
					return
				}
				if len(st.Lagging) > 0 {
					fmt.Fprintln(w, "\nLargest lags:")
					printRegistrations(w, st.Lagging)
				}
				if p := st.OldestParked; p != nil {
					fmt.Fprintf(w, "\nOldest parked: %s (%s), parked %s at cursor %d: %s\n",
						store.Name(p.Stream, p.ID), p.Host, operator.Instant(p.ParkedAt), p.NextSeq, tbl.Clean(p.LastError))
				}
				if h := st.Hosts; len(h.NotUp) > 0 {
					fmt.Fprintf(w, "\nHosts: %d down, %d unavailable, %s held for them (herald hosts):\n", h.Down, h.Unavailable, plural(h.Held, "registration"))
					t := tbl.New(w, "HOST", "STATE", "SINCE", "NEXT PROBE", "HELD", "LAST ERROR")
					for _, h := range h.NotUp {
						t.Row(h.Host, h.State, operator.Instant(h.Since), operator.Instant(h.NextProbeAt), fmt.Sprint(h.Held), h.LastError)
					}
					t.Flush()
				}
			})
		},
	}
}

func newRecordStatus(e *env) command {
	var (
		stream, id string
		seq        uint64
	)
	return command{
		use:   "record-status",
		short: "Which registrations have acknowledged a record, and which have not",
		long: `Show which registrations of a record's stream have acknowledged it (their cursor
is past it) and which have not, with their state. A cursor is past a record the
receiver acknowledged (a 2xx), and also past one it was moved over: by herald
skip, by a rejection its --on-4xx policy skips, or because its projection made
no message of it for this receiver (a record not of its --kinds, an activity
addressed to none of its --actor); herald evidence says which of the first
two. Name the record by --id, or by --stream and --seq. Registrations that
completed (acknowledged their stream's final record) are gone and not listed.
A record committed but not yet numbered (PostgreSQL, with no daemon running)
is shown waiting, with the registrations that will get it.`,
		example: `  herald record-status --stream actor/alice --seq 42
  herald record-status --id https://example.com/activities/1 --json`,
		db: readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&stream, "stream", "", "the record's stream")
			intVar(f, &seq, "seq", 0, "the record's seq in --stream", "a seq, 1 or more", 0, 0)
			f.StringVar(&id, "id", "", "the record's id")
		},
		check: func(c *call) error {
			switch bySeq := c.changed("seq"); {
			case bySeq == c.changed("id"):
				return callf("record-status needs exactly one of --seq (with --stream) or --id")
			case bySeq && stream == "":
				return callf("record-status --seq needs --stream")
			case !bySeq && id == "":
				return usageOf(journal.Invalid("id", "is empty: name the record by its id, or by --stream and --seq"))
			}
			return nil
		},
		run: func(c *call) error {
			seqText := ""
			if c.changed("seq") {
				seqText = strconv.FormatUint(seq, 10)
			}
			st, err := operator.RecordStatusOf(c.ctx(), c.b, id, stream, seqText)
			if id != "" && errors.Is(err, journal.ErrNotFound) {
				return fmt.Errorf("%w (never appended, or pruned (herald prune --help says when): %s shows what each stream retains)", err, e.hint("streams"))
			}
			if err != nil {
				return err
			}
			rec := st.Record
			if st.Unnumbered {
				return c.print(st, func(w io.Writer) {
					fmt.Fprintf(w, "Record %s of stream %s (kind %s, appended %s) is committed but waiting to be numbered: no registration can have it yet. Is a daemon running? (herald run numbers records, as does herald sweep)\n",
						tbl.Cell(rec.ID), tbl.Cell(rec.Stream), tbl.Cell(rec.Kind), operator.Instant(rec.AppendedAt))
					if len(st.NotAcknowledged) == 0 {
						fmt.Fprintln(w, "Its stream has no registration.")
						return
					}
					fmt.Fprintf(w, "Not yet acknowledged by the %s of its stream:\n", plural(len(st.NotAcknowledged), "registration"))
					printRegistrations(w, st.NotAcknowledged)
				})
			}
			return c.print(st, func(w io.Writer) {
				// How each cursor passed the record: only "yes" is an acknowledgement.
				passed := make([]string, len(st.Acknowledged))
				acked := 0
				for i, v := range st.Acknowledged {
					passed[i] = "not its kind" // passed over, never sent
					if (push.Registration{Kinds: v.Kinds}).Wants(rec.Kind) {
						passed[i] = passedAs(c, v, rec.Seq)
					}
					if passed[i] == "yes" {
						acked++
					}
				}
				fmt.Fprintf(w, "Record %s#%d (id %s, kind %s, appended %s)\n", tbl.Cell(rec.Stream), rec.Seq, tbl.Cell(rec.ID), tbl.Cell(rec.Kind), operator.Instant(rec.AppendedAt))
				if acked == len(passed) {
					fmt.Fprintf(w, "Acknowledged by %d, not yet by %d.\n", len(passed), len(st.NotAcknowledged))
				} else {
					fmt.Fprintf(w, "Past the cursor of %d (acknowledged by %d, moved past by the others), not yet of %d.\n", len(passed), acked, len(st.NotAcknowledged))
				}
				t := tbl.New(w, "ID", "NAMESPACE", "HOST", "ACKNOWLEDGED", "CURSOR", "STATE", "LAST ERROR")
				for i, v := range append(st.Acknowledged, st.NotAcknowledged...) {
					said := "no"
					if i < len(passed) {
						said = passed[i]
					}
					t.Row(v.ID, v.Namespace, v.Host, said, fmt.Sprint(v.NextSeq), v.State, v.LastError)
				}
				if t.Flush(); acked < len(passed) {
					fmt.Fprintf(w, "\n\"yes\": acknowledged (a 2xx), as far as the evidence kept tells; \"skipped\": a rejection its --on-4xx policy moved past; \"yes or skipped\": an operator's skip moved its cursor from at or before #%d; \"not its kind\": its --kinds passes it over; \"?\": its evidence could not be read. herald evidence --stream S --id ID tells more.\n", rec.Seq)
				}
			})
		},
	}
}

// passedAs says what a registration's evidence tells of how its cursor
// passed record seq: "skipped" by policy, "yes or skipped" when an
// operator's skip began at or before it (the evidence keeps where a skip
// began, not where it ended), else "yes"; "?" when it cannot be read.
func passedAs(c *call, v operator.RegistrationView, seq uint64) string {
	evs, err := c.b.Evidence(c.ctx(), v.Stream, v.ID, store.MaxEvidence)
	if err != nil {
		return "?"
	}
	said := "yes"
	for _, ev := range evs {
		switch {
		case ev.Event == store.EventSkipped && ev.Seq == seq:
			return "skipped"
		case ev.Event == store.EventSkip && ev.Seq != 0 && ev.Seq <= seq:
			said = "yes or skipped"
		}
	}
	return said
}

func newHosts(e *env) command {
	var q store.HostQuery
	return command{
		use:   "hosts",
		short: "Host health: which receivers' hosts are down or unavailable, and what they hold",
		long: `List the hosts herald keeps health for (those with a failure that says
nothing about the record: no connection, a timeout, a 502/503/504), with their
state and since when, consecutive failures, the next probe, the registrations
they hold and the last error. README, "Hosts", says how a host goes down, holds
its registrations, is probed and comes back. SCHEME is the ActivityPub
signature scheme a host accepted after refusing the other (cavage: it refused
RFC 9421; README, "ActivityPub signatures"); such a host is listed too.`,
		example: `  herald hosts
  herald hosts --state down --json
  herald hosts reset social.example:443`,
		db: readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&q.State, "state", "", "only hosts in this state: up, down or unavailable")
		},
		run: func(c *call) error {
			hs, err := store.AllHosts(c.ctx(), c.b, q)
			if err != nil {
				return err
			}
			if hs == nil {
				hs = []store.Host{}
			}
			empty := "No host has failed or refused a signature scheme: herald keeps a row only for hosts that have."
			if q.State != "" {
				empty = fmt.Sprintf("No host is %s.", q.State)
			}
			return printTable(c, hs, empty, []string{"HOST", "STATE", "SINCE", "FAILURES", "NEXT PROBE", "HELD", "SCHEME", "LAST ERROR"}, func(h store.Host) []string {
				return []string{h.Host, h.State, operator.Instant(h.Since), fmt.Sprint(h.Failures), operator.Instant(h.NextProbeAt), fmt.Sprint(h.Held), h.Scheme, h.LastError}
			})
		},
		subcommands: []command{newHostsReset(e)},
	}
}

func newHostsReset(e *env) command {
	var (
		at   instant
		host string
	)
	return command{
		use:   "reset HOST",
		short: "Bring a host up and release every registration held for it",
		long: `Reset a host as if it had answered: up, its failures forgotten, its held
registrations due again (each at its own next attempt). HOST is the host:port
that herald hosts lists, or any URL on that host. Nothing was lost while it was
held. If the host is still down, the next failures bring it down again.`,
		example: `  herald hosts reset social.example:443
  herald hosts reset https://social.example/inbox --json`,
		args: func(args []string) error {
			switch {
			case len(args) == 1 && args[0] == "":
				return usagef("hosts reset: HOST is empty; give host:port, as herald hosts lists it")
			case len(args) != 1:
				return callf("hosts reset takes one HOST (host:port, as herald hosts lists it), not %d", len(args))
			}
			return nil
		},
		db:    readDB,
		flags: func(f *pflag.FlagSet) { atFlag(f, &at) },
		check: func(c *call) error {
			var err error
			host, err = operator.HostArg(c.args[0])
			return usageOf(err)
		},
		run: func(c *call) error {
			before, err := store.AllHosts(c.ctx(), c.b, store.HostQuery{Host: host})
			if err != nil {
				return err
			}
			h, err := c.b.ResetHost(c.ctx(), host, c.at(at))
			if _, _, perr := net.SplitHostPort(host); perr != nil && errors.Is(err, journal.ErrNotFound) {
				return fmt.Errorf("%w: a host is host:port, as herald hosts lists it (%s for https)", err, journal.Shown(net.JoinHostPort(host, "443")))
			} else if err != nil {
				return fmt.Errorf("%w (%s lists the hosts herald knows)", err, e.hint("hosts"))
			}
			held := 0
			if len(before) == 1 {
				held = before[0].Held
			}
			return c.print(map[string]any{"released": held, "host": h}, func(w io.Writer) {
				if len(before) == 1 && before[0].State == store.HostUp && before[0].Failures == 0 {
					fmt.Fprintf(w, "%s was up with no failures; nothing changed.\n", tbl.Cell(h.Host))
				} else {
					fmt.Fprintf(w, "Reset %s: up since %s; %s released.\n", tbl.Cell(h.Host), operator.Instant(h.Since), plural(held, "held registration"))
				}
			})
		},
	}
}

func newRegistrations(e *env) command {
	var (
		q     store.ListQuery
		limit int
	)
	return command{
		use:   "registrations",
		short: "List registrations: cursor, head, lag, attempts, state, last error",
		long: `List registrations by stream, then id: cursor (the first seq not yet
acknowledged), the stream's head, lag, attempts at the cursor, next attempt,
state (ready, retrying, idle, parked, or held: see herald hosts) and the last
error. When more than --limit follow, it says with which command to list them
(--after-stream and --after-id: the last one listed); with --json the list is
the array alone: when it holds --limit registrations, ask again after its last.`,
		example: `  herald registrations --parked
  herald registrations --stream actor/alice --json
  herald registrations --namespace webhook --lagging --limit 1000
  herald registrations --after-stream actor/alice --after-id https://remote.example/inbox`,
		db: readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&q.Stream, "stream", "", "only this stream")
			f.StringVar(&q.Namespace, "namespace", "", "only this namespace (activitypub, cloudevents, a2a, webhook)")
			f.BoolVar(&q.Parked, "parked", false, "only parked or paused registrations (the STATE column tells them apart)")
			f.BoolVar(&q.Lagging, "lagging", false, "only registrations with records not yet acknowledged")
			intVar(f, &limit, "limit", 1000, "at most this many rows", fmt.Sprintf("from 1 to %d", store.MaxListLimit*100), 1, store.MaxListLimit*100)
			f.StringVar(&q.After.Stream, "after-stream", "", "list the registrations after this one (with --after-id): the stream of the last one listed")
			f.StringVar(&q.After.ID, "after-id", "", "list the registrations after this one (with --after-stream): the id of the last one listed")
		},
		check: func(c *call) error {
			if q.Namespace != "" {
				if err := checkNamespace(q.Namespace); err != nil {
					return err
				}
			}
			if err := operator.CheckList(q); err != nil {
				return usageOf(err)
			}
			return nil
		},
		run: func(c *call) (err error) {
			views, next, err := operator.List(c.ctx(), c.b, q, "", limit, 0)
			if err != nil {
				return err
			}
			defer func() { err = cmp.Or(err, configErrors(views)) }()
			return c.print(views, func(w io.Writer) {
				if len(views) == 0 {
					if q == (store.ListQuery{}) {
						fmt.Fprintln(w, "No registrations.")
					} else {
						fmt.Fprintln(w, "No registration matched.") // a mistyped --stream, say
					}
					return
				}
				if printRegistrations(w, views); next == nil {
					return
				}
				words := []string{e.hint("registrations")}
				for _, f := range [][2]string{{"--stream", q.Stream}, {"--namespace", q.Namespace}} {
					if f[1] != "" {
						words = append(words, f[0], shellQuote(f[1]))
					}
				}
				if q.Parked {
					words = append(words, "--parked")
				}
				if q.Lagging {
					words = append(words, "--lagging")
				}
				words = append(words, "--limit", fmt.Sprint(limit), "--after-stream", shellQuote(next.Stream), "--after-id", shellQuote(next.ID))
				fmt.Fprintf(w, "More registrations follow: %s\n", strings.Join(words, " "))
			})
		},
	}
}

// configErrors is the error of the listed registrations whose stored
// configs do not open (a keyring without their key), after the list that
// shows them: each distinct reason once.
func configErrors(views []operator.RegistrationView) error {
	var reasons []string
	for _, v := range views {
		if v.ConfigError != "" && !slices.Contains(reasons, v.ConfigError) {
			reasons = append(reasons, v.ConfigError)
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return errors.New(strings.Join(reasons, "\n"))
}
