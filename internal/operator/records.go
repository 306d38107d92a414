package operator

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode"
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
// no bytes, which the journal refuses for a JSON type (null is JSON's
// nothing). field names the record in errors ("records[2]"; "" for none).
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
		if json.Unmarshal(r.Payload, &text) != nil {
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

// errMore is DecodeJSON's error for what follows the value.
var errMore = errors.New("more than one JSON value")

// DecodeJSON decodes one JSON value from r into v, refusing unknown
// fields and anything after the value. Errors: encoding/json's, and one
// for what follows the value; JSONError names them for a user.
func DecodeJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errMore // what follows, a value or not, would be lost
	}
	return nil
}

// JSONError is DecodeJSON's error as a journal.ErrInvalid naming the
// field. where names the value decoded: a whole document ("body", "record")
// or a field of one ("records[2]"). A value of the wrong type is named by
// its field's JSON path, from where when where is a field ("records[2].kind";
// "kind" in a document).
func JSONError(where string, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		var path []string
		if strings.ContainsAny(where, "[.") {
			path = append(path, where)
		}
		for _, name := range strings.Split(te.Field, ".") {
			if name != "" && !unicode.IsUpper([]rune(name)[0]) { // the Go name of an embedded struct is no JSON field
				path = append(path, name)
			}
		}
		if len(path) == 0 {
			path = []string{where}
		}
		return journal.Invalid(strings.Join(path, "."), "is a JSON %s; want %s", te.Value, jsonType(te.Type.String()))
	case errors.As(err, &se):
		return journal.Invalid(where, "is not valid JSON (at byte %d): %v", se.Offset, se)
	case errors.Is(err, io.EOF):
		return journal.Invalid(where, "is empty: want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return journal.Invalid(where, "is not valid JSON: it ends too soon")
	}
	if errors.Is(err, errMore) {
		return journal.Invalid(where, "holds more than one JSON value: give one")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return journal.Invalid(where, "has unknown field %s", name)
	}
	return journal.Invalid(where, "%v", err)
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

// jsonType names a Go type as the JSON a client sends.
func jsonType(goType string) string {
	switch {
	case goType == "string", goType == "*string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return "an object"
}
