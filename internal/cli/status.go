package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/postgres"
)

// refusedLister is a store whose sequencer may refuse a record that raced
// its stream's final record (store/postgres).
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

func newStatus(e *env) *cobra.Command {
	return e.cobra(command{
		use:   "status",
		short: "Counts by namespace and state, the largest lags, the oldest parked registration, refused records",
		long: fmt.Sprintf(`Count each namespace's registrations by state: ready (work, due), retrying
(failures at the cursor, waiting), held (work on a host that is down or
unavailable: herald hosts), idle (caught up) and parked, with how many hold a
live lease and the records behind their cursors. Then the largest lags, the
registration parked longest, refused records (PostgreSQL) and the hosts that
are not up. With --json: namespaces (each with ready, retrying, held, idle,
parked, leased, records_behind; held ones are not in ready or retrying),
held_truncated (true when only the first %d registrations with work were
read to count the held ones), lagging, oldest_parked, refused and hosts.`, operator.MaxHeldScan),
		example: `  herald status
  herald status --json`,
		db: readDB,
		run: func(c *call) error {
			st, err := operator.StatusAt(c.ctx(), c.b, e.now())
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
			return c.print(out, func() error { return printStatus(e, st, refused) })
		},
	})
}

func printStatus(e *env, st operator.Status, refused []refusedView) error {
	t := tbl.New(e.Out, "NAMESPACE", "READY", "RETRYING", "HELD", "IDLE", "PARKED", "LEASED", "RECORDS BEHIND")
	for _, n := range slices.Sorted(maps.Keys(st.Namespaces)) {
		c := st.Namespaces[n]
		t.Row(n, fmt.Sprint(c.Ready), fmt.Sprint(c.Retrying), fmt.Sprint(c.Held), fmt.Sprint(c.Idle), fmt.Sprint(c.Parked), fmt.Sprint(c.Leased), fmt.Sprint(c.Behind))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if st.HeldTruncated {
		fmt.Fprintf(e.Out, "(HELD counts the first %d registrations with work only; herald hosts counts each host's)\n", operator.MaxHeldScan)
	}
	if len(refused) > 0 {
		fmt.Fprintf(e.Out, "\nRefused records (committed after their stream's final record; kept, never delivered; first %d):\n", refusedShown)
		rt := tbl.New(e.Out, "STREAM", "ID", "KIND", "APPENDED", "REASON")
		for _, r := range refused {
			rt.Row(tbl.Cell(r.Stream), tbl.Cell(r.ID), tbl.Cell(r.Kind), r.AppendedAt, tbl.Cell(r.Reason))
		}
		if err := rt.Flush(); err != nil {
			return err
		}
	}
	if len(st.Namespaces) == 0 {
		fmt.Fprintln(e.Out, "No registrations.")
		return nil
	}
	if len(st.Lagging) > 0 {
		fmt.Fprintln(e.Out, "\nLargest lags:")
		if err := printRegistrations(e.Out, st.Lagging); err != nil {
			return err
		}
	}
	if p := st.OldestParked; p != nil {
		fmt.Fprintf(e.Out, "\nOldest parked: %s (%s), parked %s at cursor %d: %s\n",
			push.Name(p.Stream, p.ID), p.Host, operator.Instant(p.ParkedAt), p.NextSeq, tbl.Clean(p.LastError))
	}
	if h := st.Hosts; len(h.NotUp) > 0 {
		fmt.Fprintf(e.Out, "\nHosts: %d down, %d unavailable, %d registrations held for them (herald hosts):\n", h.Down, h.Unavailable, h.Held)
		t := tbl.New(e.Out, "HOST", "STATE", "SINCE", "NEXT PROBE", "HELD", "LAST ERROR")
		for _, h := range h.NotUp {
			t.Row(h.Host, h.State, operator.Instant(h.Since), operator.Instant(h.NextProbeAt), fmt.Sprint(h.Held), h.LastError)
		}
		return t.Flush()
	}
	return nil
}

func newRecordStatus(e *env) *cobra.Command {
	var (
		stream, id string
		seq        uint64
	)
	return e.cobra(command{
		use:   "record-status",
		short: "Which registrations have acknowledged a record, and which have not",
		long: `Show which registrations of a record's stream have acknowledged it (their cursor
is past it) and which have not, with their state. A cursor is past a record the
receiver acknowledged (a 2xx), and also past one it was moved over: by herald
skip, by a rejection its --on-4xx policy skips, or because the record is not of
the registration's --kinds; herald evidence says which. Name the record by --id,
or by --stream and --seq. Registrations that completed (acknowledged their
stream's final record) are gone and not listed.`,
		example: `  herald record-status --stream actor/alice --seq 42
  herald record-status --id https://example.com/activities/1 --json`,
		db: readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&stream, "stream", "", "the record's stream")
			libIntVar(f, &seq, "seq", 0, "the record's seq in --stream", "a seq, 1 or more")
			f.StringVar(&id, "id", "", "the record's id")
		},
		check: func(c *call) error {
			switch bySeq := c.changed("seq"); {
			case bySeq == c.changed("id"):
				return usagef("record-status needs exactly one of --seq (with --stream) or --id")
			case bySeq && stream == "":
				return usagef("record-status --seq needs --stream")
			}
			return nil
		},
		run: func(c *call) error {
			rec, err := operator.FindRecord(c.ctx(), c.b, id, stream, seq)
			if id != "" && errors.Is(err, journal.ErrNotFound) {
				return fmt.Errorf("%w (never appended, or pruned once every registration had acknowledged it: %s shows what each stream retains)", err, e.hint("streams"))
			}
			if err != nil {
				return err
			}
			st, err := operator.StatusOf(c.ctx(), c.b, rec)
			if err != nil {
				return err
			}
			return c.print(st, func() error { return printRecordStatus(c, rec, st) })
		},
	})
}

func printRecordStatus(c *call, rec journal.Record, st operator.RecordStatus) error {
	// How each cursor passed the record, before the counts: only "yes" is
	// an acknowledgement.
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
	fmt.Fprintf(c.Out, "Record %s#%d (id %s, kind %s, appended %s)\n", tbl.Cell(rec.Stream), rec.Seq, tbl.Cell(rec.ID), tbl.Cell(rec.Kind), operator.Instant(rec.AppendedAt))
	if acked == len(passed) {
		fmt.Fprintf(c.Out, "Acknowledged by %d, not yet by %d.\n", len(passed), len(st.NotAcknowledged))
	} else {
		fmt.Fprintf(c.Out, "Past the cursor of %d (acknowledged by %d, moved past by the others), not yet of %d.\n", len(passed), acked, len(st.NotAcknowledged))
	}
	t := tbl.New(c.Out, "ID", "NAMESPACE", "HOST", "ACKNOWLEDGED", "CURSOR", "STATE", "LAST ERROR")
	for i, v := range append(st.Acknowledged, st.NotAcknowledged...) {
		said := "no"
		if i < len(passed) {
			said = passed[i]
		}
		t.Row(v.ID, v.Namespace, v.Host, said, fmt.Sprint(v.NextSeq), v.State, v.LastError)
	}
	if err := t.Flush(); err != nil || acked == len(passed) {
		return err
	}
	_, err := fmt.Fprintf(c.Out, "\n\"yes\": acknowledged (a 2xx), as far as the evidence kept tells; \"skipped\": a rejection its --on-4xx policy moved past; \"yes or skipped\": an operator's skip moved its cursor from at or before #%d; \"not its kind\": its --kinds passes it over; \"?\": its evidence could not be read. herald evidence --stream S --id ID tells more.\n", rec.Seq)
	return err
}

// passedAs says what a registration's evidence (the last push.MaxEvidence
// rows) tells of how its cursor passed record seq: "skipped" when a
// rejection of it was skipped by policy, "yes or skipped" when an
// operator's skip began at or before it (the evidence keeps where a skip
// began, not where it ended), "yes" otherwise, "?" when the evidence
// cannot be read.
func passedAs(c *call, v operator.RegistrationView, seq uint64) string {
	evs, err := c.b.Evidence(c.ctx(), v.Stream, v.ID, push.MaxEvidence)
	if err != nil {
		return "?"
	}
	said := "yes"
	for _, ev := range evs {
		switch {
		case ev.Event == push.EventSkipped && ev.Seq == seq:
			return "skipped"
		case ev.Event == push.EventSkip && ev.Seq != 0 && ev.Seq <= seq:
			said = "yes or skipped"
		}
	}
	return said
}
