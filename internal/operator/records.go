package operator

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
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

// notUTF8 is DecodeJSON's error for bytes that are not UTF-8, which
// encoding/json would replace with U+FFFD: "a\xff" and "a\xfe" would be one id.
type notUTF8 struct{ offset int }

func (e notUTF8) Error() string { return fmt.Sprintf("not valid UTF-8 at byte %d", e.offset) }

// repeatedKey is DecodeJSON's error for an object that has a key twice,
// of which encoding/json would keep the last. path is the object's JSON
// path ("" for the value itself, "records[0]" in it).
type repeatedKey struct{ path, key string }

func (e repeatedKey) Error() string { return fmt.Sprintf("key %q repeated in %q", e.key, e.path) }

// DecodeJSON decodes one JSON value from r into v, refusing unknown
// fields, anything after the value, bytes that are not UTF-8 and a key
// given twice in an object. Errors: encoding/json's, r's, and its own;
// JSONError names them for a user.
func DecodeJSON(r io.Reader, v any) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if !utf8.Valid(raw) {
		return notUTF8{firstInvalid(raw)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errMore // what follows, a value or not, would be lost
	}
	return uniqueKeys(raw)
}

// firstInvalid is the offset of the first byte of b that is not UTF-8.
func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// uniqueKeys returns a repeatedKey for the first object in raw, one valid
// JSON value, that has a key twice. One pass over the bytes: a key is a
// string in an object followed by ':', held as raw's bytes unless escaped;
// the open objects' keys share one stack, so a small body allocates nothing
// a key or an object; a path is built only for the error.
func uniqueKeys(raw []byte) error {
	type frame struct {
		object bool
		start  int                 // its first key in keys
		many   map[string]struct{} // an object's keys, past a few
		index  int                 // an array's value read, counted by commas
	}
	stack := make([]frame, 0, 8)
	keys := make([][]byte, 0, 32) // each open object's keys, above its parent's
	// path names the value that fs, the frames around it, are reading.
	path := func(fs []frame) string {
		var b strings.Builder
		for j, f := range fs {
			if !f.object {
				fmt.Fprintf(&b, "[%d]", f.index)
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(keys[stack[j+1].start-1]) // the key whose value is read
		}
		return b.String()
	}
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{', '[':
			stack = append(stack, frame{object: raw[i] == '{', start: len(keys)})
		case '}', ']':
			keys = keys[:stack[len(stack)-1].start]
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; !top.object {
				top.index++
			}
		case '"':
			start := i
			for i++; ; i++ { // to the quote after an even run of backslashes
				j := bytes.IndexByte(raw[i:], '"')
				if j < 0 {
					return io.ErrUnexpectedEOF // not one JSON value, which DecodeJSON's decoder refuses first
				}
				i += j
				bs := 0
				for raw[i-1-bs] == '\\' {
					bs++
				}
				if bs%2 == 0 {
					break
				}
			}
			n := len(stack)
			if n == 0 || !stack[n-1].object {
				continue
			}
			k := i + 1
			for k < len(raw) && (raw[k] == ' ' || raw[k] == '\t' || raw[k] == '\n' || raw[k] == '\r') {
				k++
			}
			if k == len(raw) || raw[k] != ':' {
				continue // a value
			}
			key := raw[start+1 : i]
			if bytes.IndexByte(key, '\\') >= 0 {
				var s string
				if err := json.Unmarshal(raw[start:i+1], &s); err != nil {
					return err
				}
				key = []byte(s)
			}
			top := &stack[n-1]
			_, dup := top.many[string(key)]
			if top.many == nil {
				dup = slices.ContainsFunc(keys[top.start:], func(k []byte) bool { return bytes.Equal(k, key) })
			}
			if dup {
				return repeatedKey{path(stack[:n-1]), string(key)}
			}
			keys = append(keys, key)
			switch own := keys[top.start:]; {
			case top.many != nil:
				top.many[string(key)] = struct{}{}
			case len(own) == 16:
				top.many = make(map[string]struct{}, 32)
				for _, k := range own {
					top.many[string(k)] = struct{}{}
				}
			}
		}
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
	if e, ok := errors.AsType[notUTF8](err); ok {
		return journal.Invalid(where, "is not valid UTF-8 (byte %d): send text as UTF-8, other bytes as a record's payload_base64", e.offset+1)
	}
	if e, ok := errors.AsType[repeatedKey](err); ok {
		field := where
		if e.path != "" && strings.ContainsAny(where, "[.") {
			field = where + "." + e.path
		} else if e.path != "" {
			field = e.path
		}
		return journal.Invalid(field, "has the key %q twice: give it once", e.key)
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
