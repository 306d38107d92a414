package daemon

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// RecordStatus says which registrations of a record's stream have
// acknowledged it (their cursor is past it) and which have not.
// Registrations that completed (acknowledged their stream's final record)
// are gone and not listed.
type RecordStatus struct {
	Record          RecordView         `json:"record"`
	Acknowledged    []RegistrationView `json:"acknowledged"`
	NotAcknowledged []RegistrationView `json:"not_acknowledged"`
}

// StatusOf returns rec's RecordStatus, reading every registration of its
// stream. Errors: the store's.
func StatusOf(ctx context.Context, s push.Store, rec journal.Record) (RecordStatus, error) {
	out := RecordStatus{Record: recordView(rec), Acknowledged: []RegistrationView{}, NotAcknowledged: []RegistrationView{}}
	regs, err := push.AllRegistrations(ctx, s, push.ListQuery{Stream: rec.Stream})
	if err != nil {
		return RecordStatus{}, err
	}
	for _, st := range regs {
		if st.NextSeq > rec.Seq {
			out.Acknowledged = append(out.Acknowledged, ViewOf(st))
		} else {
			out.NotAcknowledged = append(out.NotAcknowledged, ViewOf(st))
		}
	}
	return out, nil
}

// recordStatus answers GET /v1/records/status?id=ID or ?stream=S&seq=N.
func (d *Daemon) recordStatus(w http.ResponseWriter, r *http.Request) {
	q, err := strictQuery(r, "a record is named by ?id=… or ?stream=…&seq=…", "id", "stream", "seq")
	if err != nil {
		writeError(w, err)
		return
	}
	id, stream, seqText := q.Get("id"), q.Get("stream"), q.Get("seq")
	var rec journal.Record
	switch {
	case id != "" && seqText == "":
		var err error
		if rec, err = d.store.Lookup(r.Context(), id); err != nil {
			writeError(w, err)
			return
		}
		if stream != "" && stream != rec.Stream {
			writeError(w, journal.Invalid("stream", "record %q is in stream %q, not %q", id, rec.Stream, stream))
			return
		}
	case id == "" && stream != "" && seqText != "":
		seq, err := strconv.ParseUint(seqText, 10, 64)
		if err != nil || seq == 0 {
			writeError(w, journal.Invalid("seq", "%q is not a seq (1, 2, …)", seqText))
			return
		}
		recs, err := d.store.Read(r.Context(), stream, seq, 1)
		if err != nil {
			writeError(w, err)
			return
		}
		if len(recs) == 0 || recs[0].Seq != seq {
			writeError(w, fmt.Errorf("stream %q has no record #%d (never appended, or pruned): %w", stream, seq, journal.ErrNotFound))
			return
		}
		rec = recs[0]
	default:
		writeError(w, journal.Invalid("query", "give id, or stream and seq (/v1/records/status?id=… or ?stream=…&seq=…)"))
		return
	}
	st, err := StatusOf(r.Context(), d.store, rec)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
