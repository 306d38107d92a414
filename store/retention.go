package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// Retention keeps a store's journal and evidence bounded. Its rules, for
// each stream, at the caller's instant q.At:
//
//   - The low-water mark (StreamInfo.OldestSeq) rises past a record only
//     when every registration of the stream, parked ones included, has
//     acknowledged it and it was appended at or before q.At - q.Retain.
//     Retained records are the contiguous run OldestSeq..Head.
//   - A stream with no registration keeps its records for the retention
//     age, and its head, so later appends continue its seqs.
//   - A sealed stream with no registration left is removed entirely once its
//     final record is older than the retention age; its name and record ids
//     may then be used again.
//   - Evidence older than the retention age is removed, except a parked
//     registration's newest "parked" row: why it is parked.
//   - Rewinds, skips and new registrations below the low-water mark are
//     refused with a *PrunedError.
type Retention interface {
	// Prune removes what the rules allow, at most q.Limit records, and
	// reports it; call it again while the report says More. A dry run
	// changes nothing. Errors: journal.ErrInvalid for a bad query.
	Prune(ctx context.Context, q PruneQuery) (PruneReport, error)
	// Streams lists streams by name (StreamQuery says which).
	Streams(ctx context.Context, q StreamQuery) ([]StreamInfo, error)
}

// DefaultRetain is herald run's and herald prune's retention age: a week of
// replay for an operator who rewinds after a receiver lost data (Lemmy and
// River keep as long).
const DefaultRetain = 7 * 24 * time.Hour

// DefaultPruneBatch bounds the records one Prune call removes, so that a
// batch holds its locks for milliseconds beside appends and sweeps.
const DefaultPruneBatch = 1000

// MaxPruneBatch bounds PruneQuery.Limit.
const MaxPruneBatch = 100000

// PruneQuery asks Retention.Prune for one batch.
type PruneQuery struct {
	At     time.Time     // the caller's instant: records appended at or before At-Retain may go
	Retain time.Duration // the retention age; 0 removes records as soon as every registration acknowledged them
	Limit  int           // records removed at most in this call; 0 means DefaultPruneBatch
	DryRun bool          // report what one whole pass would remove (Limit ignored), change nothing
}

// Validate checks q and returns it with its defaults. Errors wrap
// journal.ErrInvalid.
func (q PruneQuery) Validate() (PruneQuery, error) {
	switch {
	case q.At.IsZero():
		return q, journal.Invalid("at", "is the zero time")
	case q.Retain < 0:
		return q, journal.Invalid("retain", "is %v: it must be 0 or more", q.Retain)
	case q.Limit < 0 || q.Limit > MaxPruneBatch:
		return q, journal.Invalid("limit", "is %d: it must be from 1 to %d (0 means %d)", q.Limit, MaxPruneBatch, DefaultPruneBatch)
	}
	switch {
	case q.DryRun:
		q.Limit = math.MaxInt // a dry run reports a whole pass: batches would see the same records again
	case q.Limit == 0:
		q.Limit = DefaultPruneBatch
	}
	return q, nil
}

// Cutoff is the newest appended-at a prunable record may have.
func (q PruneQuery) Cutoff() time.Time { return q.At.Add(-q.Retain) }

// PruneReport says what one Prune call removed (or, dry, would remove).
type PruneReport struct {
	Streams  int   `json:"streams"`          // streams whose low-water mark rose
	Records  int   `json:"records"`          // records removed
	Bytes    int64 `json:"bytes"`            // their payload bytes
	Removed  int   `json:"streams_removed"`  // sealed, completed streams removed entirely
	Evidence int   `json:"evidence_removed"` // evidence rows removed
	More     bool  `json:"more"`             // the batch was full: call again
}

// Add sums two reports (More is either's).
func (r PruneReport) Add(o PruneReport) PruneReport {
	return PruneReport{Streams: r.Streams + o.Streams, Records: r.Records + o.Records, Bytes: r.Bytes + o.Bytes,
		Removed: r.Removed + o.Removed, Evidence: r.Evidence + o.Evidence, More: r.More || o.More}
}

// StreamQuery filters Retention.Streams.
type StreamQuery struct {
	Stream string // only this stream, if set
	After  string // keyset paging: streams ordered after this name
	Limit  int    // 0 means push.DefaultListLimit, at most push.MaxListLimit
}

// Validate checks q and returns its effective limit. Errors wrap
// journal.ErrInvalid.
func (q StreamQuery) Validate() (int, error) {
	if q.Stream != "" {
		if err := journal.ValidateStream(q.Stream); err != nil {
			return 0, err
		}
	}
	return push.ListLimit(q.Limit)
}

// StreamInfo is one stream as herald streams shows it.
type StreamInfo struct {
	Stream        string `json:"stream"`
	Head          uint64 `json:"head"`           // seq of the newest record, 0 if none
	FinalSeq      uint64 `json:"final_seq"`      // seq of the final record, 0 while unsealed
	OldestSeq     uint64 `json:"oldest_seq"`     // the oldest retained seq; Head+1 when none is retained
	Registrations int    `json:"registrations"`  // registrations of the stream, parked ones included
	Records       uint64 `json:"records"`        // records retained: Head - OldestSeq + 1
	Bytes         int64  `json:"retained_bytes"` // payload bytes retained
}

// PrunedError refuses a cursor below a stream's low-water mark (a rewind, a
// skip, a new registration). It is a journal.ErrInvalid.
type PrunedError struct {
	Stream    string
	Seq       uint64 // the seq asked for
	OldestSeq uint64 // the oldest retained seq
}

func (e *PrunedError) Error() string {
	return fmt.Sprintf("stream %q retains records from #%d on: #%d was pruned (every registration had acknowledged it and it was older than the retention age)",
		e.Stream, e.OldestSeq, e.Seq)
}

// Is makes errors.Is(err, journal.ErrInvalid) true.
func (e *PrunedError) Is(target error) bool { return target == journal.ErrInvalid }

// CheckRetained returns a *PrunedError if seq is below oldest.
func CheckRetained(stream string, seq, oldest uint64) error {
	if seq < oldest {
		return &PrunedError{Stream: stream, Seq: seq, OldestSeq: oldest}
	}
	return nil
}
