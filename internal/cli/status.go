package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// refusedLister is implemented by stores whose sequencer may refuse a
// record that raced its stream's final record (store/postgres).
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
	return &cobra.Command{
		Use:   "status",
		Short: "Counts by namespace and state, the largest lags, the oldest parked registration, refused records",
		Long: fmt.Sprintf(`Count each namespace's registrations by state: ready (work, due), retrying
(failures at the cursor, waiting), held (work on a host that is down or
unavailable: herald hosts), idle (caught up) and parked, with how many hold a
live lease and the records behind their cursors. Then the largest lags, the
registration parked longest, refused records (PostgreSQL) and the hosts that
are not up. With --json: namespaces (each with ready, retrying, held, idle,
parked, leased, records_behind; held ones are not in ready or retrying),
held_truncated (true when only the first %d registrations with work were
read to count the held ones), lagging, oldest_parked, refused and hosts.`, operator.MaxHeldScan),
		Example: `  herald status
  herald status --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			st, err := operator.StatusAt(cmd.Context(), b, e.now())
			if err != nil {
				return err
			}
			refused := []refusedView{}
			if rl, ok := b.(refusedLister); ok {
				recs, err := rl.Refused(cmd.Context(), "", refusedShown)
				if err != nil {
					return err
				}
				for _, r := range recs {
					refused = append(refused, refusedView{r.Stream, r.ID, r.Kind, fmtTime(r.AppendedAt), r.Reason})
				}
			}
			if e.json {
				return printJSON(e.Out, struct {
					operator.Status
					Refused []refusedView `json:"refused"`
				}{st, refused})
			}
			names := make([]string, 0, len(st.Namespaces))
			for n := range st.Namespaces {
				names = append(names, n)
			}
			slices.Sort(names)
			t := newTable(e.Out, "NAMESPACE", "READY", "RETRYING", "HELD", "IDLE", "PARKED", "LEASED", "RECORDS BEHIND")
			for _, n := range names {
				c := st.Namespaces[n]
				t.row(n, fmt.Sprint(c.Ready), fmt.Sprint(c.Retrying), fmt.Sprint(c.Held), fmt.Sprint(c.Idle), fmt.Sprint(c.Parked), fmt.Sprint(c.Leased), fmt.Sprint(c.Behind))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if st.HeldTruncated {
				fmt.Fprintf(e.Out, "(HELD counts the first %d registrations with work only; herald hosts counts each host's)\n", operator.MaxHeldScan)
			}
			if len(refused) > 0 {
				fmt.Fprintf(e.Out, "\nRefused records (committed after their stream's final record; kept, never delivered; first %d):\n", refusedShown)
				rt := newTable(e.Out, "STREAM", "ID", "KIND", "APPENDED", "REASON")
				for _, r := range refused {
					rt.row(cell(r.Stream), cell(r.ID), cell(r.Kind), r.AppendedAt, cell(r.Reason))
				}
				if err := rt.flush(); err != nil {
					return err
				}
			}
			if len(names) == 0 {
				fmt.Fprintln(e.Out, "No registrations.")
				return nil
			}
			if len(st.Lagging) > 0 {
				fmt.Fprintln(e.Out, "\nLargest lags:")
				if err := printRegistrations(e.Out, false, st.Lagging); err != nil {
					return err
				}
			}
			if p := st.OldestParked; p != nil {
				fmt.Fprintf(e.Out, "\nOldest parked: %s (%s), parked %s at cursor %d: %s\n",
					push.Name(p.Stream, p.ID), p.Host, fmtTime(p.ParkedAt), p.NextSeq, tbl.Clean(p.LastError))
			}
			if len(st.Hosts.NotUp) > 0 {
				fmt.Fprintf(e.Out, "\nHosts: %d down, %d unavailable, %d registrations held for them (herald hosts):\n",
					st.Hosts.Down, st.Hosts.Unavailable, st.Hosts.Held)
				t := newTable(e.Out, "HOST", "STATE", "SINCE", "NEXT PROBE", "HELD", "LAST ERROR")
				for _, h := range st.Hosts.NotUp {
					t.row(h.Host, h.State, fmtTime(h.Since), fmtTime(h.NextProbeAt), fmt.Sprint(h.Held), h.LastError)
				}
				return t.flush()
			}
			return nil
		},
	}
}

func views(sts []push.Status) []operator.RegistrationView { return operator.Held(nil).Views(sts) }

func newRecordStatus(e *env) *cobra.Command {
	var (
		stream, id string
		seq        uint64
	)
	cmd := &cobra.Command{
		Use:   "record-status",
		Short: "Which registrations have acknowledged a record, and which have not",
		Long: `Show which registrations of a record's stream have acknowledged it (their cursor
is past it) and which have not, with their state. A cursor is past a record the
receiver acknowledged (a 2xx), and also past one it was moved over: by herald
skip, by a rejection its --on-4xx policy skips, or because the record is not of
the registration's --kinds; herald evidence says which. Name the record by --id,
or by --stream and --seq. Registrations that completed (acknowledged their
stream's final record) are gone and not listed.`,
		Example: `  herald record-status --stream actor/alice --seq 42
  herald record-status --id https://example.com/activities/1 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bySeq, byID := cmd.Flags().Changed("seq"), cmd.Flags().Changed("id")
			if bySeq == byID {
				return usagef("record-status needs exactly one of --seq (with --stream) or --id")
			}
			if bySeq && stream == "" {
				return usagef("record-status --seq needs --stream")
			}
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			var rec journal.Record
			if byID {
				if rec, err = b.Lookup(cmd.Context(), id); err != nil {
					if errors.Is(err, journal.ErrNotFound) {
						return fmt.Errorf("%w (never appended, or pruned once every registration had acknowledged it: %s shows what each stream retains)", err, e.command("streams"))
					}
					return err
				}
				if stream != "" && stream != rec.Stream {
					return fmt.Errorf("record %q is in stream %q, not %q", id, rec.Stream, stream)
				}
			} else {
				recs, err := b.Read(cmd.Context(), stream, max(seq, 1), 1)
				if err != nil {
					return err
				}
				if seq > 0 && (len(recs) == 0 || recs[0].Seq != seq) {
					infos, err := b.Streams(cmd.Context(), store.StreamQuery{Stream: stream})
					if err != nil {
						return err
					}
					if len(infos) == 1 && seq < infos[0].OldestSeq {
						return fmt.Errorf("record %s#%d was pruned: every registration had acknowledged it and it passed the retention age (the stream retains #%d on): %w",
							stream, seq, infos[0].OldestSeq, journal.ErrNotFound)
					}
				}
				if seq == 0 || len(recs) == 0 || recs[0].Seq != seq {
					return fmt.Errorf("stream %q has no record #%d: %w", stream, seq, journal.ErrNotFound)
				}
				rec = recs[0]
			}
			regs, err := push.AllRegistrations(cmd.Context(), b, push.ListQuery{Stream: rec.Stream})
			if err != nil {
				return err
			}
			var acked, pending []push.Status
			for _, s := range regs {
				if s.NextSeq > rec.Seq {
					acked = append(acked, s)
				} else {
					pending = append(pending, s)
				}
			}
			if e.json {
				return printJSON(e.Out, map[string]any{
					"record":       map[string]any{"stream": rec.Stream, "seq": rec.Seq, "id": rec.ID, "kind": rec.Kind, "appended_at": rec.AppendedAt, "final": rec.Final},
					"acknowledged": views(acked), "not_acknowledged": views(pending),
				})
			}
			// How each cursor passed the record, before the counts: only
			// "yes" is an acknowledgement.
			passed := make([]string, len(acked))
			ackedN := 0
			for i, s := range acked {
				passed[i] = "not its kind" // passed over, never sent
				if s.Wants(rec.Kind) {
					passed[i] = passedAs(cmd.Context(), b, s.Stream, s.ID, rec.Seq)
				}
				if passed[i] == "yes" {
					ackedN++
				}
			}
			fmt.Fprintf(e.Out, "Record %s#%d (id %s, kind %s, appended %s)\n", cell(rec.Stream), rec.Seq, cell(rec.ID), cell(rec.Kind), fmtTime(rec.AppendedAt))
			if ackedN == len(acked) {
				fmt.Fprintf(e.Out, "Acknowledged by %d, not yet by %d.\n", len(acked), len(pending))
			} else {
				fmt.Fprintf(e.Out, "Past the cursor of %d (acknowledged by %d, moved past by the others), not yet of %d.\n", len(acked), ackedN, len(pending))
			}
			t := newTable(e.Out, "ID", "NAMESPACE", "HOST", "ACKNOWLEDGED", "CURSOR", "STATE", "LAST ERROR")
			for i, s := range acked {
				t.row(s.ID, s.Namespace, s.Host(), passed[i], fmt.Sprint(s.NextSeq), s.State(), s.LastError)
			}
			for _, s := range pending {
				t.row(s.ID, s.Namespace, s.Host(), "no", fmt.Sprint(s.NextSeq), s.State(), s.LastError)
			}
			if err := t.flush(); err != nil || ackedN == len(acked) {
				return err
			}
			_, err = fmt.Fprintf(e.Out, "\n\"yes\": acknowledged (a 2xx), as far as the evidence kept tells; \"skipped\": a rejection its --on-4xx policy moved past; \"yes or skipped\": an operator's skip moved its cursor from at or before #%d; \"not its kind\": its --kinds passes it over; \"?\": its evidence could not be read. herald evidence --stream S --id ID tells more.\n", rec.Seq)
			return err
		},
	}
	cmd.Flags().StringVar(&stream, "stream", "", "the record's stream")
	cmd.Flags().Uint64Var(&seq, "seq", 0, "the record's seq in --stream")
	intRange(cmd, "seq", "a seq, 1 or more")
	cmd.Flags().StringVar(&id, "id", "", "the record's id")
	return cmd
}

// passedAs says what a registration's evidence tells of how its cursor
// passed record seq: "skipped" when a rejection of that record was skipped
// by policy, "yes or skipped" when an operator's skip began at or before it
// (its evidence keeps where the skip began, not where it ended), "yes"
// otherwise (the receiver acknowledged it, as far as the evidence kept, the
// last push.MaxEvidence, tells), "?" when the evidence cannot be read.
func passedAs(ctx context.Context, b backend, stream, id string, seq uint64) string {
	evs, err := b.Evidence(ctx, stream, id, push.MaxEvidence)
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
