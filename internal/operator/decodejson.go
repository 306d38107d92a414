package operator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/heraldpush/herald/journal"
)

// errMore is DecodeJSON's error for what follows the value.
var errMore = errors.New("more than one JSON value")

// notUTF8 is DecodeJSON's error for bytes that are not UTF-8, which
// encoding/json would replace with U+FFFD: "a\xff" and "a\xfe" would be one id.
type notUTF8 struct{ offset int }

func (e notUTF8) Error() string { return fmt.Sprintf("not valid UTF-8 at byte %d", e.offset) }

// repeatedKey is DecodeJSON's error for an object that has a key twice, of
// which encoding/json would keep the last; or, decoded into a struct, two
// keys that differ in case only (first and key), which it reads into one
// field. path is the object's JSON path ("" for the value itself,
// "records[0]" in it).
type repeatedKey struct{ path, first, key string }

func (e repeatedKey) Error() string { return fmt.Sprintf("key %q repeated in %q", e.key, e.path) }

// loneSurrogate is DecodeJSON's error for a string escaping half a UTF-16
// surrogate pair (\udcff), which encoding/json reads as U+FFFD, as it does
// bytes that are not UTF-8. path names the string: a value's JSON path, or
// the object's whose key it is.
type loneSurrogate struct {
	path, escape string
	key          bool
}

func (e loneSurrogate) Error() string {
	return fmt.Sprintf("lone surrogate %s in %q", e.escape, e.path)
}

// DecodeJSON decodes one JSON value from r into v, refusing unknown
// fields, anything after the value, bytes that are not UTF-8, an escaped
// lone surrogate, a key given twice in an object and, in an object decoded
// into a struct, keys that differ in case only: what encoding/json would
// replace, drop or merge (RFC 7493, I-JSON, forbids them too). Errors:
// encoding/json's, r's, and its own; JSONError names them for a user.
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
	return checkKeys(raw, shapeOf(reflect.TypeOf(v)))
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
	if e, ok := errors.AsType[repeatedKey](err); ok && e.first == e.key {
		return journal.Invalid(inside(where, e.path), "has the key %q twice: give it once", e.key)
	} else if ok {
		return journal.Invalid(inside(where, e.path), "has the keys %q and %q, which name one field whatever the case: give it once", e.first, e.key)
	}
	if e, ok := errors.AsType[loneSurrogate](err); ok {
		what := "escapes"
		if e.key {
			what = "has a key escaping"
		}
		return journal.Invalid(inside(where, e.path), "%s half a UTF-16 surrogate pair alone (%s), which JSON decoders read as U+FFFD: escape both halves (\\ud83d\\ude00), or send the character as UTF-8", what, e.escape)
	}
	if errors.Is(err, errMore) {
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

// shape is what of a JSON value encoding/json decodes into a struct, whose
// fields it matches to keys ignoring case: an object's fields by folded
// name, or an array's (or a map's) elements'. A nil shape is data
// (json.RawMessage, any, a json.Unmarshaler): its keys are compared
// exactly.
type shape struct {
	fields map[string]*shape
	elem   *shape
}

var (
	shapes      sync.Map // reflect.Type → *shape
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// shapeOf is the shape of a value decoded into t, built once a type.
func shapeOf(t reflect.Type) *shape {
	if t == nil {
		return nil
	}
	if sh, ok := shapes.Load(t); ok {
		return sh.(*shape)
	}
	sh, _ := shapes.LoadOrStore(t, buildShape(t, map[reflect.Type]*shape{}))
	return sh.(*shape)
}

// buildShape is shapeOf's work; building holds the structs being built, so
// that a type holding itself ends.
func buildShape(t reflect.Type, building map[reflect.Type]*shape) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if el := buildShape(t.Elem(), building); el != nil {
			return &shape{elem: el}
		}
	case reflect.Map:
		if el := buildShape(t.Elem(), building); el != nil {
			return &shape{elem: el} // its keys are data; its values are read into el
		}
	case reflect.Struct:
		if sh, ok := building[t]; ok {
			return sh
		}
		sh := &shape{fields: map[string]*shape{}}
		building[t] = sh
		addFields(sh, t, building)
		return sh
	}
	return nil
}

// addFields adds the JSON fields of struct t to sh, as encoding/json names
// them: a tag's name, else the Go name; an untagged embedded struct's
// fields as its own.
func addFields(sh *shape, t reflect.Type, building map[reflect.Type]*shape) {
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case name == "-" || len(f.Index) > 1 && !promoted(t, f):
			continue // dropped, or reached through a field that is not promoted
		case f.Anonymous && name == "" && ft.Kind() == reflect.Struct:
			continue // its fields are visible in turn
		case !f.IsExported():
			continue
		}
		name = cmpOr(name, f.Name)
		sh.fields[name] = buildShape(f.Type, building)
		sh.fields[fold(name)] = sh.fields[name]
	}
}

// promoted reports whether f, a field of an embedded struct of t, is read
// as t's: every struct on its way is embedded, untagged.
func promoted(t reflect.Type, f reflect.StructField) bool {
	for _, i := range f.Index[:len(f.Index)-1] {
		sf := t.Field(i)
		if !sf.Anonymous || sf.Tag.Get("json") != "" {
			return false
		}
		if t = sf.Type; t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	}
	return true
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fold is the name encoding/json matches a key to a field by: each rune
// upper of its lower case.
func fold(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'a' <= c && c <= 'z' {
			return strings.Map(func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }, s)
		}
	}
	return s
}

// checkKeys returns the first repeatedKey or loneSurrogate of raw, one valid
// JSON value decoded into sh. One pass over the bytes: a key is a string in
// an object followed by ':', held as raw's bytes unless escaped, the open
// objects' keys in one stack, so that a small body allocates nothing a key;
// a string is unescaped only when it is an escaped key or checked for lone
// surrogates when it holds a '\'; a path is built only for the error.
func checkKeys(raw []byte, root *shape) error {
	type frame struct {
		object bool
		shape  *shape            // what the value is read into
		start  int               // an object's first key in keys
		many   map[string]string // an object's keys past a few, by name (folded in a struct)
		index  int               // an array's value read, counted by commas
	}
	stack := make([]frame, 0, 8)
	keys := make([][]byte, 0, 32) // each open object's keys, above its parent's
	// key is the key whose value frame j, an object, reads.
	key := func(j int) []byte {
		if j+1 < len(stack) {
			return keys[stack[j+1].start-1]
		}
		return keys[len(keys)-1]
	}
	path := func(n int) string { // of the value that the first n frames read
		var b strings.Builder
		for j, f := range stack[:n] {
			if !f.object {
				fmt.Fprintf(&b, "[%d]", f.index)
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(key(j))
		}
		return b.String()
	}
	// inner is the shape of the value that the top of the stack reads now.
	inner := func() *shape {
		n := len(stack)
		switch {
		case n == 0:
			return root
		case stack[n-1].shape == nil:
			return nil
		case stack[n-1].shape.fields != nil:
			f, k := stack[n-1].shape.fields, key(n-1)
			if sh, ok := f[string(k)]; ok { // as the tag has it, mostly
				return sh
			}
			return f[fold(string(k))]
		}
		return stack[n-1].shape.elem
	}
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{', '[':
			stack = append(stack, frame{object: raw[i] == '{', shape: inner(), start: len(keys)})
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
			k := i + 1
			for k < len(raw) && (raw[k] == ' ' || raw[k] == '\t' || raw[k] == '\n' || raw[k] == '\r') {
				k++
			}
			isKey := n > 0 && stack[n-1].object && k < len(raw) && raw[k] == ':'
			s := raw[start+1 : i]
			escaped := bytes.IndexByte(s, '\\') >= 0
			if escaped {
				if esc := firstLoneSurrogate(s); esc != "" {
					if isKey {
						return loneSurrogate{path(n - 1), esc, true}
					}
					return loneSurrogate{path(n), esc, false}
				}
			}
			if !isKey {
				continue // a value
			}
			if escaped {
				var k string
				if err := json.Unmarshal(raw[start:i+1], &k); err != nil {
					return err
				}
				s = []byte(k)
			}
			top := &stack[n-1]
			inStruct := top.shape != nil && top.shape.fields != nil // one field, whatever the case
			var first string
			var dup bool
			if top.many != nil {
				first, dup = top.many[name(inStruct, s)]
			} else {
				for _, k := range keys[top.start:] {
					if bytes.Equal(k, s) || inStruct && bytes.EqualFold(k, s) { // encoding/json's fold
						first, dup = string(k), true
						break
					}
				}
			}
			if dup {
				return repeatedKey{path(n - 1), first, string(s)}
			}
			keys = append(keys, s)
			switch own := keys[top.start:]; {
			case len(own) == 16:
				top.many = make(map[string]string, 32)
				for _, k := range own {
					top.many[name(inStruct, k)] = string(k)
				}
			case top.many != nil:
				top.many[name(inStruct, s)] = string(s)
			}
		}
	}
	return nil
}

// name is key as checkKeys compares it: folded in a struct's object.
func name(inStruct bool, key []byte) string {
	if inStruct {
		return fold(string(key))
	}
	return string(key)
}

// firstLoneSurrogate is the first \u escape in s, a valid JSON string's
// bytes between its quotes, of half a UTF-16 surrogate pair alone; "" when
// none.
func firstLoneSurrogate(s []byte) string {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if i++; s[i] != 'u' {
			continue
		}
		switch r := hex4(s[i+1:]); {
		case r >= 0xdc00 && r <= 0xdfff:
			return string(s[i-1 : i+5]) // a low half first
		case r >= 0xd800 && r <= 0xdbff:
			if i+10 < len(s) && s[i+5] == '\\' && s[i+6] == 'u' {
				if lo := hex4(s[i+7:]); lo >= 0xdc00 && lo <= 0xdfff {
					i += 10 // a pair
					continue
				}
			}
			return string(s[i-1 : i+5])
		}
		i += 4
	}
	return ""
}

// hex4 reads the 4 hex digits that begin b.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
