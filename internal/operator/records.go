package operator

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/heraldpush/herald/journal"
)

// RecordInput is a record as an operator gives it: a record of the HTTP
// API's POST /v1/records, a line of append --file (which adds "stream").
type RecordInput struct {
	ID            string          `json:"id"`
	Kind          string          `json:"kind"`
	ContentType   string          `json:"content_type"`
	Payload       json.RawMessage `json:"payload"`
	PayloadBase64 *string         `json:"payload_base64"`
	Final         bool            `json:"final"`
	Traceparent   string          `json:"traceparent"`
	Tracestate    string          `json:"tracestate"`
}

// Entry is r as a journal entry, its payload read by one rule: "payload"
// is any JSON value, stored as given for a JSON content type (the
// default), and for another type a JSON string, stored as its text;
// "payload_base64" (RFC 4648 §4, padded) is bytes of any type; neither is
// no bytes, which the journal refuses for a JSON type. A JSON null is a
// JSON type's payload (its 4 bytes), and no string for another type.
// field names the record in errors ("records[2]"; "" for none).
// Errors: journal.ErrInvalid.
func (r RecordInput) Entry(field string) (journal.Entry, error) {
	name := func(f string) string { return strings.TrimPrefix(field+"."+f, ".") }
	e := journal.Entry{ID: r.ID, Kind: r.Kind, ContentType: r.ContentType, Final: r.Final,
		Traceparent: r.Traceparent, Tracestate: r.Tracestate}
	ct := cmp.Or(e.ContentType, journal.DefaultContentType)
	isJSON := journal.IsJSONContentType(ct)
	switch {
	case r.Payload != nil && r.PayloadBase64 != nil:
		return e, journal.Invalid(name("payload"), "is given with payload_base64: give one, not both")
	case r.PayloadBase64 != nil:
		p, err := base64.StdEncoding.DecodeString(*r.PayloadBase64)
		if err != nil {
			return e, journal.Invalid(name("payload_base64"), "is not base64 (RFC 4648, padded): %v", err)
		}
		e.Payload = p
	case r.Payload != nil && isJSON:
		e.Payload = []byte(r.Payload)
	case r.Payload != nil:
		var text string
		if jsonKind(r.Payload) == "null" || json.Unmarshal(r.Payload, &text) != nil { // null would read as ""
			return e, journal.Invalid(name("payload"), "is a JSON %s, but content_type %q takes a JSON string (its text) or payload_base64 (its bytes)", jsonKind(r.Payload), ct)
		}
		e.Payload = []byte(text)
	}
	return e, nil
}

// RecordOutput is a record whole, as records --json prints it, with the
// field names of append --file's lines: RecordView's fields, and its
// payload by Entry's rule read backwards: "payload" the JSON of a JSON
// content type (compacted: its value, not its bytes), else the text of a
// payload that is UTF-8, as a JSON string; "payload_base64" any other
// bytes.
type RecordOutput struct {
	RecordView
	Payload       json.RawMessage `json:"payload,omitempty"`
	PayloadBase64 []byte          `json:"payload_base64,omitempty"` // encoding/json writes []byte as base64
}

// OutputRecord returns r as RecordOutput shows it.
func OutputRecord(r journal.Record) RecordOutput {
	out := RecordOutput{RecordView: ViewRecord(r)}
	var b bytes.Buffer
	switch isJSON := journal.IsJSONContentType(r.ContentType); {
	case isJSON && json.Compact(&b, r.Payload) == nil:
		out.Payload = b.Bytes()
	case !isJSON && utf8.Valid(r.Payload):
		out.Payload, _ = json.Marshal(string(r.Payload)) // a string never fails
	default:
		out.PayloadBase64 = r.Payload
	}
	return out
}

// jsonKind names the kind of the JSON value raw, as jsonType names a type.
func jsonKind(raw json.RawMessage) string {
	switch t := bytes.TrimLeft(raw, " \t\r\n"); {
	case len(t) == 0:
		return "value"
	case t[0] == '{':
		return "object"
	case t[0] == '[':
		return "array"
	case t[0] == 't' || t[0] == 'f':
		return "boolean"
	case t[0] == 'n':
		return "null"
	default:
		return "number"
	}
}
