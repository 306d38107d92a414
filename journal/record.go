package journal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// DefaultContentType is the content type of an entry that names none.
const DefaultContentType = "application/json"

// Entry is what a caller appends: one future record, without its position.
type Entry struct {
	// ID is the record id: caller-chosen, unique in the journal, at most
	// MaxIDBytes bytes, no control characters. It is the idempotency key and
	// the id of the messages projected from the record.
	ID string
	// Kind says what happened, e.g. "Create", "com.github.push",
	// "statusUpdate". At most MaxKindBytes bytes, no control characters.
	Kind string
	// ContentType is the media type of Payload (RFC 9110 §8.3.1). Empty means
	// DefaultContentType. A JSON type (application/json or any +json suffix)
	// requires a payload that is valid JSON.
	ContentType string
	// Payload is the record's body, at most the store's payload limit
	// (DefaultMaxPayload unless configured).
	Payload []byte
	// Final seals the stream: no record may be appended after this one.
	Final bool
	// Traceparent and Tracestate are the W3C trace context of the append
	// (trace.go): empty, or a valid traceparent (ValidateTraceparent) and
	// a tracestate given only with one. Stored with the record, not part
	// of its content.
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

// Journal is the append-only store of records.
//
// Implementations are safe for concurrent use. All methods return errors that
// wrap the package's sentinels.
type Journal interface {
	// Append appends entries to stream, in order, all or nothing, and returns
	// the stored records (one per entry, in order). An entry whose id is
	// already stored with the same content yields the stored record and is not
	// written again. Errors: ErrInvalid (bad stream or entry, including
	// duplicate ids within the batch), ErrConflict (an id exists with other
	// content), ErrSealed (the stream, or an earlier entry of the batch, is
	// final).
	Append(ctx context.Context, stream string, entries ...Entry) ([]Record, error)

	// Read returns up to limit records of stream with seq >= fromSeq, in seq
	// order. A stream with no such records yields an empty slice and no error.
	// Errors: ErrInvalid (bad stream name, fromSeq 0 or limit < 1).
	Read(ctx context.Context, stream string, fromSeq uint64, limit int) ([]Record, error)

	// Head returns the seq of the newest committed record of stream, or 0 if
	// the stream has none. Errors: ErrInvalid (bad stream name).
	Head(ctx context.Context, stream string) (uint64, error)

	// Lookup returns the record with the given id. Errors: ErrInvalid (bad id),
	// ErrNotFound.
	Lookup(ctx context.Context, id string) (Record, error)
}

// Digest returns a SHA-256 digest of the content of an entry appended to
// stream: the stream, kind, content type (after defaulting), payload and final
// flag, each length-prefixed. Stores keep it to detect an id re-appended with
// different content without comparing payloads byte by byte.
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
	field([]byte(contentType(e.ContentType)))
	field(e.Payload)
	if e.Final {
		field([]byte{1})
	} else {
		field([]byte{0})
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// Same reports whether entry e appended to stream has the content of the
// stored record r. If not, it returns a *ConflictError naming the first field
// that differs.
func Same(r Record, stream string, e Entry) error {
	field := ""
	switch {
	case r.Stream != stream:
		field = "stream"
	case r.Kind != e.Kind:
		field = "kind"
	case r.ContentType != contentType(e.ContentType):
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

func contentType(ct string) string {
	if ct == "" {
		return DefaultContentType
	}
	return ct
}
