package journal

import (
	"cmp"
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
	// (store.EventsStream), read and registered on like any other.
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

// ValidateID is ValidateText for a record or registration id, at most
// MaxIDBytes (spaces are allowed, as in some URIs written by hand).
func ValidateID(field, id string) error { return ValidateText(field, id, MaxIDBytes) }

// ValidateText checks free text that herald stores and shows (an
// operator's reason): non-empty, at most max bytes of UTF-8, no control
// characters (U+2028 and U+2029 included). Errors wrap ErrInvalid and name
// field.
func ValidateText(field, s string, max int) error {
	return validateName(field, s, max, true)
}

func validateName(field, s string, max int, spaces bool) error {
	switch {
	case s == "":
		return Invalid(field, "is empty")
	case len(s) > max:
		return Invalid(field, "is longer than %d bytes (%d)", max, len(s))
	case !utf8.ValidString(s):
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
	switch err := ValidateStream(stream); {
	case err != nil:
		return nil, err
	case strings.HasPrefix(stream, ReservedPrefix):
		return nil, Invalid("stream", "%q is reserved: streams named %s… are herald's own (its operational events), and only herald appends to them", stream, ReservedPrefix)
	case len(entries) == 0:
		return nil, Invalid("entries", "is empty: nothing to append")
	case len(entries) > MaxBatch:
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
		e.ContentType = cmp.Or(e.ContentType, DefaultContentType)
		if err := checkEntry(e, maxPayload, seen, len(entries)-1-i); err != nil {
			if ie, ok := err.(*InvalidError); ok {
				err = &InvalidError{Field: fmt.Sprintf("entries[%d].%s", i, ie.Field), Reason: ie.Reason}
			}
			return nil, err
		}
		if seen != nil {
			seen[e.ID] = i
		}
		out[i] = e
	}
	return out, nil
}

// checkEntry returns e's first problem as an *InvalidError naming its bare
// field ("id"); seen holds the batch's ids before it, and follow counts the
// entries after it.
func checkEntry(e Entry, maxPayload int, seen map[string]int, follow int) error {
	if err := ValidateID("id", e.ID); err != nil {
		return err
	}
	switch j, dup := seen[e.ID]; {
	case strings.HasPrefix(e.ID, ReservedIDPrefix):
		return Invalid("id", "starts with %q, reserved for herald's own events", ReservedIDPrefix)
	case dup:
		return Invalid("id", "%q repeats entries[%d].id in the same batch", e.ID, j)
	}
	if err := validateName("kind", e.Kind, MaxKindBytes, false); err != nil {
		return err
	}
	mt, err := mediaType(e.ContentType)
	switch {
	case len(e.ContentType) > MaxContentTypeBytes:
		return Invalid("content_type", "is longer than %d bytes (%d)", MaxContentTypeBytes, len(e.ContentType))
	case err != nil:
		return Invalid("content_type", "%q is not a media type: %v", e.ContentType, err)
	case len(e.Payload) > maxPayload:
		return Invalid("payload", "is %d bytes, more than the limit of %d", len(e.Payload), maxPayload)
	case IsJSON(mt) && len(e.Payload) == 0:
		return Invalid("payload", "is missing or empty: content type %s requires a JSON value", mt)
	case IsJSON(mt) && !json.Valid(e.Payload):
		return Invalid("payload", "is not valid JSON, as content type %s requires", mt)
	}
	if err := cmp.Or(ValidateTraceparent("traceparent", e.Traceparent), ValidateTracestate("tracestate", e.Tracestate, e.Traceparent)); err != nil {
		return err
	}
	if e.Final && follow > 0 {
		follows := fmt.Sprintf("%d entries follow", follow)
		if follow == 1 {
			follows = "1 entry follows"
		}
		return Invalid("final", "is set but %s: only the last entry of a batch may be final", follows)
	}
	return nil
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
func ValidateRead(stream string, fromSeq uint64, limit, maxBytes int) error {
	if err := ValidateStream(stream); err != nil {
		return err
	}
	if fromSeq == 0 {
		return Invalid("from seq", "is 0: seqs start at 1")
	}
	if limit < 1 {
		return Invalid("limit", "is %d: it must be at least 1", limit)
	}
	if maxBytes < 0 {
		return Invalid("max bytes", "is %d: it must be 0 (no byte bound) or more", maxBytes)
	}
	return nil
}

// PageEnd returns how many of recs, read in seq order, a page of at most
// limit records and maxBytes payload bytes holds (Journal.Read): at least
// one if recs has any. A store that reads in Go stops with it.
func PageEnd(recs []Record, limit, maxBytes int) int {
	n, total := 0, 0
	for n < len(recs) && n < limit {
		total += len(recs[n].Payload)
		if n > 0 && maxBytes > 0 && total > maxBytes {
			break
		}
		n++
	}
	return n
}

// IsJSON reports whether the media type mt (without parameters) is JSON:
// application/json or a structured syntax suffix +json (RFC 6838 §4.2.8).
func IsJSON(mt string) bool {
	mt = strings.ToLower(mt)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// IsJSONContentType is IsJSON of content type ct's media type, ct as an
// Entry or a Record carries it (parameters and all). It checks nothing
// else: ValidateEntries refuses a ct that is not a media type.
func IsJSONContentType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return IsJSON(strings.TrimSpace(mt))
}
