package operator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Status is the plane at a glance, as herald status and the page's
// overview show it.
type Status struct {
	// HeldTruncated: only the first MaxHeldScan registrations with work
	// were read to count the held ones.
	HeldTruncated bool                     `json:"held_truncated"`
	Hosts         HostSummary              `json:"hosts"`
	Lagging       []RegistrationView       `json:"lagging"` // the largest lags, largest first
	Namespaces    map[string]NamespaceView `json:"namespaces"`
	OldestParked  *RegistrationView        `json:"oldest_parked"`
	// Unnumbered counts the records committed but waiting to be numbered
	// (store.Stats.Unnumbered): in no namespace's records behind yet.
	Unnumbered store.Unnumbered `json:"unnumbered"`
}

// UnnumberedStale is how long a record may wait to be numbered before
// herald asks whether a daemon runs: a running sequencer steps at least
// every 100 ms (store/postgres.MaxSequencerInterval), so a record that
// waited this long has none numbering it.
const UnnumberedStale = 10 * time.Second

// UnnumberedNote says what waits to be numbered at instant at, "" for
// nothing: "12 records (of 3 streams) waiting to be numbered, the oldest
// appended 2026-… (5m ago); " and then stale, once the oldest waited
// UnnumberedStale.
func UnnumberedNote(u store.Unnumbered, at time.Time, stale string) string {
	if u.Records == 0 {
		return ""
	}
	note := fmt.Sprintf("%d %s", u.Records, plural(u.Records, "record", "records"))
	if u.Streams > 1 {
		note += fmt.Sprintf(" (of %d streams)", u.Streams)
	}
	note += " waiting to be numbered"
	if !u.Oldest.IsZero() {
		note += fmt.Sprintf(", the oldest appended %s (%s ago)", Instant(u.Oldest), max(at.Sub(u.Oldest), 0).Round(time.Second))
	}
	if at.Sub(u.Oldest) >= UnnumberedStale {
		note += "; " + stale
	}
	return note
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Names are the namespaces' names, sorted.
func (s Status) Names() []string { return slices.Sorted(maps.Keys(s.Namespaces)) }

// NamespaceView is one namespace's counts: Store.Stats', with those held
// for their host moved out of ready and retrying into Held.
type NamespaceView struct {
	store.NamespaceStats
	Held int `json:"held"`
}

// StatusAt reads the Status at instant at. Errors are the store's.
func StatusAt(ctx context.Context, s store.Store, at time.Time) (Status, error) {
	st, err := s.Stats(ctx, at)
	if err != nil {
		return Status{}, err
	}
	hs, err := store.AllHosts(ctx, s, store.HostQuery{})
	if err != nil {
		return Status{}, err
	}
	out, notUp := Status{Hosts: SummarizeHosts(hs), Namespaces: map[string]NamespaceView{}}, Held{}
	for _, h := range hs {
		if h.State != store.HostUp {
			notUp[h.Host] = h
		}
	}
	held, truncated, err := splitHeld(ctx, s, st.Namespaces, notUp)
	if err != nil {
		return Status{}, err
	}
	out.HeldTruncated, out.Lagging, out.Unnumbered = truncated, notUp.Views(st.Lagging), st.Unnumbered
	for ns, c := range st.Namespaces {
		out.Namespaces[ns] = NamespaceView{c, held[ns]}
	}
	if p := st.OldestParked; p != nil {
		v := notUp.View(*p)
		out.OldestParked = &v
	}
	return out, nil
}

// MaxHeldScan bounds the registrations read to count the held ones.
const MaxHeldScan = 100_000

// splitHeld moves the registrations held for a host of notUp out of the
// ready and retrying counts of namespaces and returns how many each holds,
// reading at most MaxHeldScan lagging registrations (past that, truncated).
// Stats and List are two reads: under change the counts are approximate.
func splitHeld(ctx context.Context, s store.Store, namespaces map[string]store.NamespaceStats, notUp Held) (held map[string]int, truncated bool, err error) {
	held = map[string]int{}
	if len(notUp) == 0 {
		return held, false, nil
	}
	q := store.ListQuery{Lagging: true, Limit: store.MaxListLimit}
	for scanned := 0; ; {
		page, err := s.List(ctx, q)
		if err != nil {
			return nil, false, err
		}
		for _, r := range page {
			c, ok := namespaces[r.Namespace]
			if _, down := notUp[r.Host()]; !ok || !down || r.Parked || r.Lag() == 0 {
				continue
			}
			held[r.Namespace]++
			if r.State() == store.StateRetrying {
				c.Retrying = max(c.Retrying-1, 0)
			} else {
				c.Ready = max(c.Ready-1, 0)
			}
			namespaces[r.Namespace] = c
		}
		scanned += len(page)
		if len(page) < q.Limit {
			return held, false, nil
		}
		if scanned >= MaxHeldScan {
			return held, true, nil
		}
		q.After = page[len(page)-1].Key()
	}
}

// HostSummary counts the hosts herald keeps health for (those that ever
// failed for their host) by state, and lists the first maxNotUp not up
// (herald hosts lists them all).
type HostSummary struct {
	Up          int          `json:"up"`
	Down        int          `json:"down"`
	Unavailable int          `json:"unavailable"`
	Held        int          `json:"held"` // registrations held by the hosts not up
	NotUp       []store.Host `json:"not_up"`
}

const maxNotUp = 10

// SummarizeHosts returns the summary of hs.
func SummarizeHosts(hs []store.Host) HostSummary {
	sum := HostSummary{NotUp: []store.Host{}}
	for _, h := range hs {
		switch h.State {
		case store.HostDown:
			sum.Down++
		case store.HostUnavailable:
			sum.Unavailable++
		default:
			sum.Up++
			continue
		}
		sum.Held += h.Held
		if len(sum.NotUp) < maxNotUp {
			sum.NotUp = append(sum.NotUp, h)
		}
	}
	return sum
}

// RecordView is a record as the APIs and herald record-status show it:
// without its payload.
type RecordView struct {
	Stream      string    `json:"stream"`
	Seq         uint64    `json:"seq"`
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	ContentType string    `json:"content_type"`
	Final       bool      `json:"final"`
	AppendedAt  time.Time `json:"appended_at,omitzero"`
	Traceparent string    `json:"traceparent,omitempty"` // the append's W3C trace context, as stored
	Tracestate  string    `json:"tracestate,omitempty"`
}

// ViewRecord returns r as shown.
func ViewRecord(r journal.Record) RecordView {
	return RecordView{Stream: r.Stream, Seq: r.Seq, ID: r.ID, Kind: r.Kind, ContentType: r.ContentType, Final: r.Final,
		AppendedAt: r.AppendedAt, Traceparent: r.Traceparent, Tracestate: r.Tracestate}
}

// findRecord finds the record named by id (in stream, if given), or else
// by stream and seq; one waiting to be numbered has seq 0. Errors:
// journal.ErrNotFound, saying when it was pruned; journal.ErrInvalid for a
// stream that does not hold id.
func findRecord(ctx context.Context, j journal.Journal, id, stream string, seq uint64) (journal.Record, error) {
	if id != "" {
		rec, err := j.Lookup(ctx, id)
		if ue, ok := errors.AsType[*journal.UnnumberedError](err); ok {
			rec, err = ue.Record, nil
		}
		if err == nil && stream != "" && stream != rec.Stream {
			return rec, journal.Invalid("stream", "record %q is in stream %q, not %q", id, rec.Stream, stream)
		}
		return rec, err
	}
	if seq == 0 {
		return journal.Record{}, journal.Invalid("seq", "0 is not a seq (1, 2, …)")
	}
	recs, err := j.Read(ctx, stream, seq, 1, 0)
	switch {
	case err != nil:
		return journal.Record{}, err
	case len(recs) == 1 && recs[0].Seq == seq:
		return recs[0], nil
	}
	if r, ok := j.(store.Retention); ok {
		infos, err := r.Streams(ctx, store.StreamQuery{Stream: stream, Limit: 1})
		if err != nil {
			return journal.Record{}, err
		}
		if len(infos) == 1 && seq < infos[0].OldestSeq {
			return journal.Record{}, fmt.Errorf("record %s#%d was pruned: past the retention age, and acknowledged by every registration, followed by none, or held past a retain-max (the stream retains #%d on): %w",
				stream, seq, infos[0].OldestSeq, journal.ErrNotFound)
		}
		if len(infos) == 1 && infos[0].Unnumbered > 0 {
			return journal.Record{}, fmt.Errorf("stream %q has no record #%d yet (head %d): %d more %s waiting to be numbered; is a daemon running?: %w",
				stream, seq, infos[0].Head, infos[0].Unnumbered, plural(infos[0].Unnumbered, "is", "are"), journal.ErrNotFound)
		}
	}
	return journal.Record{}, fmt.Errorf("stream %q has no record #%d (never appended, or pruned): %w", stream, seq, journal.ErrNotFound)
}

// RecordStatusOf is the RecordStatus of the record named by id, or by stream
// and seq (text, as a query gives it); a record that waits to be numbered
// has one too. Errors: journal.ErrInvalid, the store's (journal.ErrNotFound,
// saying when the record was pruned).
func RecordStatusOf(ctx context.Context, s store.Backend, id, stream, seqText string) (RecordStatus, error) {
	var seq uint64
	const how = "name the record by id, or by stream and seq"
	switch {
	case id != "" && seqText != "":
		return RecordStatus{}, journal.Invalid("seq", "is given with id: %s, not both", how)
	case id != "":
	case stream == "" && seqText == "":
		return RecordStatus{}, journal.Invalid("id", "is required: %s", how)
	case stream == "":
		return RecordStatus{}, journal.Invalid("stream", "is required with seq: %s", how)
	case seqText == "":
		return RecordStatus{}, journal.Invalid("seq", "is required with stream: %s", how)
	default:
		n, err := strconv.ParseUint(seqText, 10, 64)
		if err != nil || n == 0 {
			return RecordStatus{}, journal.Invalid("seq", "%q is not a seq (1, 2, …)", seqText)
		}
		seq = n
	}
	rec, err := findRecord(ctx, s, id, stream, seq)
	if err != nil {
		return RecordStatus{}, err
	}
	held, err := HeldHosts(ctx, s)
	if err != nil {
		return RecordStatus{}, err
	}
	regs, err := store.AllRegistrations(ctx, s, store.ListQuery{Stream: rec.Stream})
	if err != nil {
		return RecordStatus{}, err
	}
	out := RecordStatus{Record: ViewRecord(rec), Unnumbered: rec.Seq == 0, Acknowledged: []RegistrationView{}, NotAcknowledged: []RegistrationView{}}
	for _, st := range regs {
		if st.NextSeq > rec.Seq && !out.Unnumbered {
			out.Acknowledged = append(out.Acknowledged, held.View(st))
		} else {
			out.NotAcknowledged = append(out.NotAcknowledged, held.View(st))
		}
	}
	return out, nil
}

// RecordStatus says which registrations of a record's stream have
// acknowledged it (their cursor is past it) and which have not.
// Registrations that completed their sealed stream are gone and not listed.
type RecordStatus struct {
	Record RecordView `json:"record"`
	// Unnumbered: the record is committed but waits to be numbered (its
	// seq is 0), so no registration has it yet.
	Unnumbered      bool               `json:"unnumbered,omitempty"`
	Acknowledged    []RegistrationView `json:"acknowledged"`
	NotAcknowledged []RegistrationView `json:"not_acknowledged"`
}
