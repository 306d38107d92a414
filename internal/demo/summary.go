package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/push"
)

// StateCompleted is the state the demo reports for a registration that
// acknowledged its stream's terminal record and so was deleted (an A2A task
// that ended).
const StateCompleted = "completed"

// Summary is the outcome of one demo run, as `herald demo --json` prints it.
type Summary struct {
	OK       bool     `json:"ok"`       // every check passed
	Failures []string `json:"failures"` // what failed, in words; empty when OK
	Input    string   `json:"input"`
	Database string   `json:"database"`
	Records  int      `json:"records"` // records appended
	Streams  int      `json:"streams"`
	// Seconds is the whole run; DeliverSeconds the first delivery, until
	// every registration delivered everything or was parked;
	// RecoverSeconds the down receiver's catching up after its unpark.
	Seconds        float64               `json:"seconds"`
	DeliverSeconds float64               `json:"deliver_seconds"`
	RecoverSeconds float64               `json:"recover_seconds"`
	Registrations  []RegistrationSummary `json:"registrations"`
	Receivers      []ReceiverSummary     `json:"receivers"`
	Recovered      []Recovery            `json:"recovered"` // the down receiver's registrations, unparked
}

// RegistrationSummary is one registration at the end of the run.
type RegistrationSummary struct {
	Stream    string `json:"stream"`
	ID        string `json:"id"`
	Receiver  string `json:"receiver"`
	Namespace string `json:"namespace"`
	Records   int    `json:"records"`  // records in the stream
	Expected  int    `json:"expected"` // messages the journal says the receiver should get
	// Delivered and Failed count herald's attempts (push.Hooks): messages
	// accepted with a 2xx, and attempts that failed. Retried counts the
	// failures after which herald scheduled a retry (the others parked).
	Delivered   int  `json:"delivered"`
	Failed      int  `json:"failed"`
	Retried     int  `json:"retried"`
	TimesParked int  `json:"times_parked"`
	Verifies    bool `json:"verifies"` // its receiver verifies what it gets
	// Verified, Duplicates, Refused and VerifyFailures are the receiver's
	// own counts on this registration's path.
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

func receiverSummary(r *Receiver) ReceiverSummary {
	return ReceiverSummary{Name: r.Name, Namespace: r.Namespace, About: r.About, Verifies: r.Verifies, Counts: r.Total()}
}

// judge returns what failed: a verification failure anywhere; a verifying
// receiver whose verified count is not what the journal says it should
// have received; a registration parked other than gone's; gone's not
// parked at cursor 1; a down registration that did not recover.
func judge(s *Summary) []string {
	var out []string
	for _, r := range s.Receivers {
		if r.Failures > 0 {
			out = append(out, fmt.Sprintf("the %s receiver refused %d deliveries it could not verify (%s)", r.Name, r.Failures, strings.Join(r.Reasons, "; ")))
		}
	}
	recovered := map[string]bool{}
	for _, rc := range s.Recovered {
		recovered[rc.Stream+"\x00"+rc.ID] = rc.Recovered
	}
	for _, r := range s.Registrations {
		name := push.Name(r.Stream, r.ID)
		switch {
		case r.Receiver == GoneName:
			if !r.Parked || r.NextSeq != 1 {
				out = append(out, fmt.Sprintf("%s should be parked at cursor 1 after its 410, but is %s at cursor %d", name, r.State, r.NextSeq))
			}
			continue
		case r.Receiver == DownName && !recovered[r.Stream+"\x00"+r.ID]:
			out = append(out, fmt.Sprintf("%s did not recover after its unpark (%s at cursor %d of %d)", name, r.State, r.NextSeq, r.Head))
		case r.Parked:
			out = append(out, fmt.Sprintf("%s is parked: %s", name, r.LastError))
		}
		if r.Verifies && r.Verified != r.Expected {
			out = append(out, fmt.Sprintf("the %s receiver verified %d of the %d messages the journal says %s should have received", r.Receiver, r.Verified, r.Expected, name))
		}
	}
	return out
}

// printReceivers shows the receivers and what each checks (our own
// words, printed whole rather than cut to a table cell).
func printReceivers(w io.Writer, rs []*Receiver) {
	fmt.Fprintln(w, "\nReceivers, each a real HTTP server on loopback:")
	for _, r := range rs {
		fmt.Fprintf(w, "  %-11s  %-11s  %-22s  %s\n", r.Name, r.Namespace, r.URL(), r.About)
	}
}

// printRegistrations shows one row per registration.
func printRegistrations(w io.Writer, rows []RegistrationSummary) error {
	t := table.New(w, "STREAM", "RECEIVER", "NAMESPACE", "RECORDS", "EXPECTED", "DELIVERED", "RETRIED", "STATE", "CURSOR", "VERIFIED")
	for _, r := range rows {
		verified := "-"
		if r.Verifies {
			verified = fmt.Sprintf("%d/%d", r.Verified, r.Expected)
		}
		if r.VerifyFailures > 0 {
			verified += fmt.Sprintf(" (%d FAILED)", r.VerifyFailures)
		}
		t.Row(r.Stream, r.Receiver, r.Namespace, fmt.Sprint(r.Records), fmt.Sprint(r.Expected), fmt.Sprint(r.Delivered),
			fmt.Sprint(r.Retried), r.State, fmt.Sprint(r.NextSeq), verified)
	}
	return t.Flush()
}

// printVerdict says whether the demo passed, and what failed.
func printVerdict(w io.Writer, s *Summary) {
	for _, r := range s.Registrations {
		if r.Receiver == GoneName && r.Parked {
			fmt.Fprintf(w, "%s stays parked at cursor %d: its %d records are kept until an operator unparks it.\n", push.Name(r.Stream, r.ID), r.NextSeq, r.Head-r.NextSeq+1)
		}
	}
	if s.OK {
		verified, kept := 0, 0
		for _, r := range s.Receivers {
			verified += r.Verified
		}
		for _, r := range s.Registrations {
			if r.Receiver == GoneName {
				kept += r.Expected
			}
		}
		// The progress lines count every expected message: say where
		// the difference is.
		fmt.Fprintf(w, "\nOK in %.1fs: every receiver verified everything it was sent (%d messages), and the 410 receiver's registration is parked with its cursor intact, its %d kept (%d in all).\n",
			s.Seconds, verified, kept, verified+kept)
		return
	}
	fmt.Fprintf(w, "\nFAILED after %.1fs:\n", s.Seconds)
	for _, f := range s.Failures {
		fmt.Fprintf(w, "  - %s\n", f)
	}
}
