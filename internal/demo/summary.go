package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldpush/herald/store"
)

// Summary is the outcome of one run, as `herald demo --json` prints it.
type Summary struct {
	OK       bool     `json:"ok"`       // every check passed
	Failures []string `json:"failures"` // what failed, in words; empty when OK
	Input    string   `json:"input"`
	Database string   `json:"database"`
	Records  int      `json:"records"` // records appended
	Streams  int      `json:"streams"`
	// Seconds is the whole run; DeliverSeconds until every registration
	// delivered everything or was parked; RecoverSeconds down's catching up.
	Seconds        float64               `json:"seconds"`
	DeliverSeconds float64               `json:"deliver_seconds"`
	RecoverSeconds float64               `json:"recover_seconds"`
	Registrations  []RegistrationSummary `json:"registrations"`
	Receivers      []ReceiverSummary     `json:"receivers"`
	Recovered      []Recovery            `json:"recovered"` // the down receiver's registrations, unparked
}

// RegistrationSummary is one registration, as the demo's table shows it.
type RegistrationSummary struct {
	Stream    string `json:"stream"`
	ID        string `json:"id"`
	Receiver  string `json:"receiver"`
	Namespace string `json:"namespace"`
	Records   int    `json:"records"`  // records in the stream
	Expected  int    `json:"expected"` // messages the journal says the receiver should get
	// Delivered and Failed count herald's attempts (push.Hooks); Retried
	// the failures followed by a retry (the others parked).
	Delivered   int  `json:"delivered"`
	Failed      int  `json:"failed"`
	Retried     int  `json:"retried"`
	TimesParked int  `json:"times_parked"`
	Verifies    bool `json:"verifies"` // its receiver verifies what it gets
	// The receiver's own counts on this registration's path.
	Verified       int    `json:"verified"`
	Duplicates     int    `json:"duplicates"`
	Refused        int    `json:"refused"`
	VerifyFailures int    `json:"verify_failures"`
	State          string `json:"state"` // ready, retrying, idle, parked, completed
	Parked         bool   `json:"parked"`
	NextSeq        uint64 `json:"next_seq"`
	Head           uint64 `json:"head"`
	LastError      string `json:"last_error,omitempty"`
}

// Counts is what a receiver verified on one path or on all.
type Counts struct {
	Expected   int      `json:"expected"`          // messages the journal says it should receive
	Verified   int      `json:"verified"`          // distinct messages verified, in journal order
	Duplicates int      `json:"duplicates"`        // verified messages received again (at-least-once)
	Refused    int      `json:"refused"`           // requests answered with a failure on purpose (503, 410, 500)
	Failures   int      `json:"failures"`          // requests that failed verification
	Reasons    []string `json:"reasons,omitempty"` // the first distinct reasons of the failures, at most 3
}

// ReceiverSummary is one receiver's own account over all its paths.
type ReceiverSummary struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	About     string `json:"about"`
	Verifies  bool   `json:"verifies"`
	Counts
}

// Recovery is the catching up of one registration of the down receiver.
type Recovery struct {
	Stream    string `json:"stream"`
	ID        string `json:"id"`
	WasParked bool   `json:"was_parked"` // parked when the demo unparked it
	FromSeq   uint64 `json:"from_seq"`   // its cursor when unparked
	NextSeq   uint64 `json:"next_seq"`   // its cursor at the end
	Head      uint64 `json:"head"`
	Delivered int    `json:"delivered"`
	Verified  int    `json:"verified"`
	Expected  int    `json:"expected"`
	Recovered bool   `json:"recovered"` // active again, at the head, everything verified
}

// rows reads the registrations of ps with both sides' counts; parks adds
// how often each was parked, from its evidence.
func (s *scenario) rows(ctx context.Context, ps []*plan, parks bool) ([]RegistrationSummary, error) {
	all, err := store.AllRegistrations(ctx, s.cfg.Store, store.ListQuery{})
	if err != nil {
		return nil, fmt.Errorf("read the registrations: %w", err)
	}
	sts := map[store.Key]store.Status{}
	for _, st := range all {
		sts[st.Key()] = st
	}
	out := make([]RegistrationSummary, 0, len(ps))
	for _, p := range ps {
		p.receiver.mu.Lock()
		row := p.RegistrationSummary
		p.receiver.mu.Unlock()
		st, ok := sts[p.reg.Key()]
		switch {
		case !ok: // completed: its stream's terminal record was acknowledged, and the registration deleted
			row.State, row.Head = "completed", uint64(row.Records)
			if n := len(p.want); n > 0 {
				row.NextSeq = p.want[n-1].Record.Seq + 1
			}
		case parks:
			evs, err := s.cfg.Store.Evidence(ctx, p.reg.Stream, p.reg.ID, 0)
			if err != nil {
				return nil, err
			}
			for _, ev := range evs {
				if ev.Event == store.EventParked {
					row.TimesParked++
				}
			}
			fallthrough
		default:
			row.State, row.NextSeq, row.Head, row.Parked, row.LastError = st.State(), st.NextSeq, st.Head, st.Parked, st.LastError
		}
		row.Retried = max(0, row.Failed-row.TimesParked)
		out = append(out, row)
	}
	return out, nil
}

// finish reads the final state of every registration, judges the run
// (package doc) and prints the verdict.
func (s *scenario) finish(ctx context.Context) error {
	rows, err := s.rows(ctx, s.plans, true)
	if err != nil {
		return err
	}
	sum, fail := s.sum, func(format string, args ...any) {
		s.sum.Failures = append(s.sum.Failures, fmt.Sprintf(format, args...))
	}
	sum.Registrations = rows
	verified, kept := 0, 0
	for _, r := range s.rs {
		c := r.counts("")
		sum.Receivers = append(sum.Receivers, ReceiverSummary{Name: r.name, Namespace: r.proj.Namespace(), About: r.about, Verifies: r.verifies, Counts: c})
		if verified += c.Verified; c.Failures > 0 {
			fail("the %s receiver refused %d deliveries it could not verify (%s)", r.name, c.Failures, strings.Join(c.Reasons, "; "))
		}
	}
	for i := range sum.Recovered {
		rc := &sum.Recovered[i]
		row := rows[slices.IndexFunc(rows, func(r RegistrationSummary) bool { return r.Stream == rc.Stream && r.ID == rc.ID })]
		rc.NextSeq, rc.Head, rc.Delivered, rc.Verified, rc.Expected = row.NextSeq, row.Head, row.Delivered, row.Verified, row.Expected
		rc.Recovered = !row.Parked && row.NextSeq == row.Head+1 && row.Verified == row.Expected
		if rc.Recovered {
			fmt.Fprintf(s.out, "%s caught up in %.1fs: cursor %d → %d, %d messages delivered, %d of %d verified by the receiver.\n",
				store.Name(rc.Stream, rc.ID), sum.RecoverSeconds, rc.FromSeq, rc.NextSeq, rc.Delivered, rc.Verified, rc.Expected)
		}
	}
	for _, r := range rows {
		name := store.Name(r.Stream, r.ID)
		switch {
		case r.Receiver == goneName:
			kept += r.Expected
			if r.Parked {
				fmt.Fprintf(s.out, "%s stays parked at cursor %d: its %d records are kept until an operator unparks it.\n", name, r.NextSeq, r.Head-r.NextSeq+1)
			}
			if !r.Parked || r.NextSeq != 1 {
				fail("%s should be parked at cursor 1 after its 410, but is %s at cursor %d", name, r.State, r.NextSeq)
			}
			continue
		case r.Receiver == downName && !slices.ContainsFunc(sum.Recovered, func(rc Recovery) bool { return rc.Stream == r.Stream && rc.ID == r.ID && rc.Recovered }):
			fail("%s did not recover after its unpark (%s at cursor %d of %d)", name, r.State, r.NextSeq, r.Head)
		case r.Parked:
			fail("%s is parked: %s", name, r.LastError)
		}
		if r.Verifies && r.Verified != r.Expected {
			fail("the %s receiver verified %d of the %d messages the journal says %s should have received", r.Receiver, r.Verified, r.Expected, name)
		}
	}
	sum.OK, sum.Seconds = len(sum.Failures) == 0, time.Since(s.started).Seconds()
	if !sum.OK {
		fmt.Fprintf(s.out, "\nFAILED after %.1fs:\n", sum.Seconds)
		for _, f := range sum.Failures {
			fmt.Fprintf(s.out, "  - %s\n", f)
		}
		return nil
	}
	fmt.Fprintf(s.out, "\nOK in %.1fs: every receiver verified everything it was sent (%d messages), and the 410 receiver's registration is parked with its cursor intact, its %d kept (%d in all).\n",
		sum.Seconds, verified, kept, verified+kept)
	return nil
}
