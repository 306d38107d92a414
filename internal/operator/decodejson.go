package operator

import (
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/heraldpush/herald/internal/strictjson"
	"github.com/heraldpush/herald/journal"
)

// DecodeJSON decodes one JSON value from r into v by strictjson.Decode:
// unknown fields, anything after the value, and what encoding/json would
// replace, drop or merge are refused. Errors: r's and strictjson.Decode's;
// JSONError names them for a user.
func DecodeJSON(r io.Reader, v any) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return strictjson.Decode(raw, v)
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
			if name != "" && strings.ToLower(name) == name { // an embedded struct's Go name (endpointRequest) is no JSON field; herald's are snake_case
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
	if e, ok := errors.AsType[strictjson.NotUTF8](err); ok {
		return journal.Invalid(where, "is not valid UTF-8 (byte %d): send text as UTF-8, other bytes as a record's payload_base64", e.Offset+1)
	}
	if e, ok := errors.AsType[strictjson.RepeatedKey](err); ok && e.First == e.Key {
		return journal.Invalid(inside(where, e.Path.String()), "has the key %q twice: give it once", e.Key)
	} else if ok {
		return journal.Invalid(inside(where, e.Path.String()), "has the keys %q and %q, which name one field whatever the case: give it once", e.First, e.Key)
	}
	if e, ok := errors.AsType[strictjson.LoneSurrogate](err); ok {
		what := "escapes"
		if e.Key {
			what = "has a key escaping"
		}
		return journal.Invalid(inside(where, e.Path.String()), "%s half a UTF-16 surrogate pair alone (%s), which JSON decoders read as U+FFFD: escape both halves (\\ud83d\\ude00), or send the character as UTF-8", what, e.Escape)
	}
	if errors.Is(err, strictjson.ErrMore) {
		return journal.Invalid(where, "holds more than one JSON value: give one")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return journal.Invalid(where, "has unknown field %s", name)
	}
	return journal.Invalid(where, "%v", err)
}

// inside names the value at JSON path path in where (JSONError's).
func inside(where, path string) string {
	switch {
	case path == "":
		return where
	case strings.ContainsAny(where, "[."):
		return where + "." + path
	}
	return path
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
