package journal

import (
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on input, in bytes (MaxBatch in entries). They bound what one
// record costs every store and receiver; a bigger payload belongs in object
// storage, referenced by URL.
const (
	MaxStreamBytes      = 200
	MaxIDBytes          = 1024
	MaxKindBytes        = 200
	MaxContentTypeBytes = 200 // with its parameters
	// DefaultMaxPayload (1 MiB) is the payload limit of a store not
	// configured otherwise: ActivityPub servers commonly refuse bodies
	// above 1 MB, and webhook receivers are stricter still.
	DefaultMaxPayload = 1 << 20
	MaxBatch          = 10000 // entries of one Append
)

// Prefixes that only herald's operational events use; ValidateEntries
// refuses them.
const (
	// ReservedPrefix starts the names of herald's own streams
	// (push.EventsStream), read and registered on like any other.
	ReservedPrefix = "herald/"
	// ReservedIDPrefix starts the ids of herald's events, in any stream: an
	// event's id is predictable, and a producer taking it would make the
	// event fail with a conflict.
	ReservedIDPrefix = "herald-event:"
)

// ValidateStream checks a stream name: non-empty, at most MaxStreamBytes of
// UTF-8, no whitespace or control characters. Errors wrap ErrInvalid.
func ValidateStream(stream string) error {
	return validateName("stream", stream, MaxStreamBytes, false)
}

// ValidateID checks a record or registration id as ValidateText does, at
// most MaxIDBytes (spaces are allowed, as in some URIs written by hand).
func ValidateID(field, id string) error {
	return validateName(field, id, MaxIDBytes, true)
}

// ValidateText checks free text that herald stores and shows (an
// operator's reason): non-empty, at most max bytes of UTF-8, no control
// characters (U+2028 and U+2029 included). Errors wrap ErrInvalid and name
// field.
func ValidateText(field, s string, max int) error {
	return validateName(field, s, max, true)
}

func validateName(field, s string, max int, spaces bool) error {
	if s == "" {
		return Invalid(field, "is empty")
	}
	if len(s) > max {
		return Invalid(field, "is longer than %d bytes (%d)", max, len(s))
	}
	if !utf8.ValidString(s) {
		return Invalid(field, "is not valid UTF-8")
	}
	for i, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return Invalid(field, "has a control character %U at byte %d", r, i)
		}
		if !spaces && unicode.IsSpace(r) {
			return Invalid(field, "has whitespace %U at byte %d", r, i)
		}
	}
	return nil
}

// ValidateEntries checks a batch to append to stream (the fields' rules are
// on Entry; a final entry must be the last) and returns it with content
// types defaulted. maxPayload is the store's limit in bytes (0 means
// DefaultMaxPayload). The first problem is an *InvalidError naming the
// entry and field ("entries[2].id").
func ValidateEntries(stream string, entries []Entry, maxPayload int) ([]Entry, error) {
	if err := ValidateStream(stream); err != nil {
		return nil, err
	}
	if strings.HasPrefix(stream, ReservedPrefix) {
		return nil, Invalid("stream", "%q is reserved: streams named %s… are herald's own (its operational events), and only herald appends to them", stream, ReservedPrefix)
	}
	if len(entries) == 0 {
		return nil, Invalid("entries", "is empty: nothing to append")
	}
	if len(entries) > MaxBatch {
		return nil, Invalid("entries", "has %d entries, more than %d", len(entries), MaxBatch)
	}
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	out := make([]Entry, len(entries))
	var seen map[string]int // ids of the batch; one entry needs none
	if len(entries) > 1 {
		seen = make(map[string]int, len(entries))
	}
	for i, e := range entries {
		at := func(err error) error {
			if ie, ok := err.(*InvalidError); ok {
				return &InvalidError{Field: fmt.Sprintf("entries[%d].%s", i, ie.Field), Reason: ie.Reason}
			}
			return err
		}
		if err := ValidateID("id", e.ID); err != nil {
			return nil, at(err)
		}
		if strings.HasPrefix(e.ID, ReservedIDPrefix) {
			return nil, at(Invalid("id", "starts with %q, reserved for herald's own events", ReservedIDPrefix))
		}
		if seen != nil {
			if j, dup := seen[e.ID]; dup {
				return nil, at(Invalid("id", "%q repeats entries[%d].id in the same batch", e.ID, j))
			}
			seen[e.ID] = i
		}
		if err := validateName("kind", e.Kind, MaxKindBytes, false); err != nil {
			return nil, at(err)
		}
		e.ContentType = contentType(e.ContentType)
		if len(e.ContentType) > MaxContentTypeBytes {
			return nil, at(Invalid("content_type", "is longer than %d bytes (%d)", MaxContentTypeBytes, len(e.ContentType)))
		}
		mt, err := mediaType(e.ContentType)
		if err != nil {
			return nil, at(Invalid("content_type", "%q is not a media type: %v", e.ContentType, err))
		}
		if len(e.Payload) > maxPayload {
			return nil, at(Invalid("payload", "is %d bytes, more than the limit of %d", len(e.Payload), maxPayload))
		}
		if IsJSON(mt) && len(e.Payload) == 0 {
			return nil, at(Invalid("payload", "is missing or empty: content type %s requires a JSON value", mt))
		}
		if IsJSON(mt) && !json.Valid(e.Payload) {
			return nil, at(Invalid("payload", "is not valid JSON, as content type %s requires", mt))
		}
		if err := ValidateTraceparent("traceparent", e.Traceparent); err != nil {
			return nil, at(err)
		}
		if err := ValidateTracestate("tracestate", e.Tracestate, e.Traceparent); err != nil {
			return nil, at(err)
		}
		if e.Final && i < len(entries)-1 {
			follow := fmt.Sprintf("%d entries follow", len(entries)-1-i)
			if len(entries)-1-i == 1 {
				follow = "1 entry follows"
			}
			return nil, at(Invalid("final", "is set but %s: only the last entry of a batch may be final", follow))
		}
		out[i] = e
	}
	return out, nil
}

// mediaType returns ct's media type, lower-cased, without parameters, or
// why ct is not type/subtype with valid parameters (mime.ParseMediaType).
// A bare type/subtype of token bytes, the usual case, skips the parser.
func mediaType(ct string) (string, error) {
	slash := strings.IndexByte(ct, '/')
	bare := slash > 0 && slash < len(ct)-1
	for i := 0; bare && i < len(ct); i++ {
		bare = i == slash || isTokenByte(ct[i])
	}
	if bare {
		return strings.ToLower(ct), nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if typ, sub, ok := strings.Cut(mt, "/"); err == nil && (!ok || typ == "" || sub == "" || strings.Contains(sub, "/")) {
		err = fmt.Errorf("want type/subtype")
	}
	return mt, err
}

// isTokenByte reports whether c may be in an RFC 2045 token: printable
// ASCII but space and the tspecials.
func isTokenByte(c byte) bool {
	return c > 0x20 && c < 0x7f && !strings.ContainsRune(`()<>@,;:\"/[]?=`, rune(c))
}

// ValidateRead checks the arguments of Journal.Read. Errors wrap ErrInvalid.
func ValidateRead(stream string, fromSeq uint64, limit int) error {
	if err := ValidateStream(stream); err != nil {
		return err
	}
	if fromSeq == 0 {
		return Invalid("from seq", "is 0: seqs start at 1")
	}
	if limit < 1 {
		return Invalid("limit", "is %d: it must be at least 1", limit)
	}
	return nil
}

// IsJSON reports whether the media type mt (without parameters) is JSON:
// application/json or a structured syntax suffix +json (RFC 6838 §4.2.8).
func IsJSON(mt string) bool {
	mt = strings.ToLower(mt)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}
