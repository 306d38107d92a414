package journal

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// DefaultContentType is the content type of an entry that names none.
const DefaultContentType = "application/json"

// Entry is what a caller appends: one future record, without its position.
type Entry struct {
	// ID is the record id: unique in the journal, the idempotency key and
	// the id of the messages projected from the record (ValidateID).
	ID string
	// Kind says what happened ("Create", "com.github.push"): at most
	// MaxKindBytes, no whitespace or control characters.
	Kind string
	// ContentType is the media type of Payload (RFC 9110 §8.3.1); empty
	// means DefaultContentType. A JSON type requires valid JSON (IsJSON).
	ContentType string
	// Payload is at most the store's payload limit (DefaultMaxPayload
	// unless configured).
	Payload []byte
	// Final seals the stream: nothing may be appended after this record.
	Final bool
	// Traceparent and Tracestate are the append's W3C trace context
	// (ValidateTraceparent, ValidateTracestate), stored with the record but
	// not part of its content.
	Traceparent string
	Tracestate  string
}

// Record is one stored entry of a stream.
type Record struct {
	Stream      string
	Seq         uint64 // 1-based, gapless, commit-ordered within Stream
	ID          string
	Kind        string
	ContentType string
	Payload     []byte
	Final       bool
	AppendedAt  time.Time // the store's clock when the record was appended (UTC)
	Traceparent string    // the append's W3C trace context, "" if none (Entry.Traceparent)
	Tracestate  string
}

// Entry returns the part of r that a caller appended.
func (r Record) Entry() Entry {
	return Entry{ID: r.ID, Kind: r.Kind, ContentType: r.ContentType, Payload: r.Payload, Final: r.Final,
		Traceparent: r.Traceparent, Tracestate: r.Tracestate}
}

// Journal is the append-only store of records, safe for concurrent use.
type Journal interface {
	// Append appends entries to stream, in order, all or nothing, and returns
	// the stored records, one per entry; an id stored with the same content
	// yields the stored record. Errors: ErrInvalid (bad stream or entry, an
	// id twice in the batch), ErrConflict (an id exists with other content),
	// ErrSealed (the stream, or an earlier entry of the batch, is final).
	Append(ctx context.Context, stream string, entries ...Entry) ([]Record, error)

	// Read returns up to limit records of stream with seq >= fromSeq, in seq
	// order, stopping before the one whose payload would take the page's
	// payload bytes past maxBytes (0: no byte bound); the first record is
	// returned whatever its size. None is not an error. Errors: ErrInvalid
	// (ValidateRead).
	Read(ctx context.Context, stream string, fromSeq uint64, limit, maxBytes int) ([]Record, error)

	// Head returns the seq of the newest committed record of stream, or 0 if
	// the stream has none. Errors: ErrInvalid (bad stream name).
	Head(ctx context.Context, stream string) (uint64, error)

	// Lookup returns the record with the given id. Errors: ErrInvalid (bad id),
	// ErrNotFound; for a record committed but not yet numbered, an
	// *UnnumberedError (which is an ErrNotFound: Read does not see it yet).
	Lookup(ctx context.Context, id string) (Record, error)
}

// Digest returns the SHA-256 of an entry's content appended to stream: the
// stream, kind, content type (defaulted), payload and final flag, each
// prefixed by its length (8 bytes, big-endian). Stores keep it to detect a
// conflict without comparing payloads.
func Digest(stream string, e Entry) [32]byte {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(stream))
	field([]byte(e.Kind))
	field([]byte(cmp.Or(e.ContentType, DefaultContentType)))
	field(e.Payload)
	var final byte
	if e.Final {
		final = 1
	}
	field([]byte{final})
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// Same returns nil when entry e appended to stream has the content of the
// stored record r, else a *ConflictError naming the first field that
// differs.
func Same(r Record, stream string, e Entry) error {
	field := ""
	switch {
	case r.Stream != stream:
		field = "stream"
	case r.Kind != e.Kind:
		field = "kind"
	case r.ContentType != cmp.Or(e.ContentType, DefaultContentType):
		field = "content type"
	case !bytes.Equal(r.Payload, e.Payload):
		field = "payload"
	case r.Final != e.Final:
		field = "final flag"
	default:
		return nil
	}
	return &ConflictError{ID: e.ID, Stream: r.Stream, Seq: r.Seq, Field: field}
}
