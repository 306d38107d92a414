package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/heraldpush/herald/daemon"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/push"
)

// printJSON writes v as indented JSON and a newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table is the CLI's text table (internal/table, shared with the demo).
type table struct{ *tbl.Table }

func newTable(w io.Writer, header ...string) *table { return &table{tbl.New(w, header...)} }

func (t *table) row(cells ...string) { t.Row(cells...) }

func (t *table) flush() error { return t.Flush() }

// cell makes s safe for one table cell (see table.Cell).
func cell(s string) string { return tbl.Cell(s) }

// regName names a registration in words (see table.Registration).
func regName(stream, id string) string { return tbl.Registration(stream, id) }

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// registrationView is a registration as the CLI and the APIs show it.
type registrationView = daemon.RegistrationView

func viewOf(s push.Status) registrationView { return daemon.ViewOf(s) }

func redactURL(raw string) string { return daemon.RedactURL(raw) }

// heldBy maps each host that is not up to its state (daemon.Held).
type heldBy = daemon.Held

func notUpHosts(ctx context.Context, hs push.HostStore) (heldBy, error) {
	return daemon.HeldHosts(ctx, hs)
}

func viewHeld(s push.Status, held heldBy) registrationView { return held.View(s) }

func printRegistrations(w io.Writer, asJSON bool, sts []push.Status, held heldBy) error {
	views := make([]registrationView, len(sts))
	for i, s := range sts {
		views[i] = viewHeld(s, held)
	}
	if asJSON {
		return printJSON(w, views)
	}
	t := newTable(w, "STREAM", "ID", "NAMESPACE", "HOST", "KINDS", "WINDOW", "CURSOR", "HEAD", "LAG", "ATTEMPTS", "NEXT ATTEMPT", "STATE", "LAST ERROR")
	for _, v := range views {
		kinds := "all"
		if len(v.Kinds) > 0 {
			kinds = strings.Join(v.Kinds, ",")
		}
		state := v.State
		if v.HeldFor != "" {
			state = "held: host " + v.HeldFor
		}
		next := fmtTime(v.NextAttemptAt)
		if v.Parked {
			next = "parked" // not attempted until unparked, whatever the stored instant
		}
		t.row(v.Stream, v.ID, v.Namespace, v.Host, kinds, fmt.Sprint(v.Window), fmt.Sprint(v.NextSeq), fmt.Sprint(v.Head), fmt.Sprint(v.Lag),
			fmt.Sprint(v.Attempts), next, state, v.LastError)
	}
	return t.flush()
}
