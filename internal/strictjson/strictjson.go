// Package strictjson decodes JSON as encoding/json does, refusing what it
// would replace, drop or merge: bytes that are not UTF-8 ("a\xff" and
// "a\xfe" would be one id), an escaped lone surrogate (read as U+FFFD too),
// a key given twice in an object (the last kept) and, in an object decoded
// into a struct, keys that differ in case only (read into one field). RFC
// 7493, I-JSON, forbids them too. Request bodies (operator.DecodeJSON) and
// registrations' configs (projconfig.Decode) go through it.
package strictjson

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
)

// ErrMore is Decode's error for what follows the value.
var ErrMore = errors.New("more than one JSON value")

// NotUTF8 is Decode's error for bytes that are not UTF-8. When the rest is
// JSON, the byte is in a string, which Path names as LoneSurrogate's does;
// else Path is nil.
type NotUTF8 struct {
	Offset int // of the first such byte, from 0
	Path   Path
	Key    bool
}

func (e NotUTF8) Error() string { return fmt.Sprintf("not valid UTF-8 at byte %d", e.Offset) }

// RepeatedKey is Decode's error for an object that has a key twice; or,
// decoded into a struct, two keys that differ in case only (First and
// Key). Path is the object's.
type RepeatedKey struct {
	Path       Path
	First, Key string
}

func (e RepeatedKey) Error() string { return fmt.Sprintf("key %q repeated in %q", e.Key, e.Path) }

// LoneSurrogate is Decode's error for a string escaping half a UTF-16
// surrogate pair (Escape, "\udcff"). Path names the string: a value's, or
// the object's whose key (Key) it is.
type LoneSurrogate struct {
	Path   Path
	Escape string
	Key    bool
}

func (e LoneSurrogate) Error() string {
	return fmt.Sprintf("lone surrogate %s in %q", e.Escape, e.Path)
}

// Path is where a value is in a JSON document, from its root.
type Path []Step

// Step is an object's Key, or an array's element when Index >= 0.
type Step struct {
	Key   string
	Index int
}

// String is the path as JavaScript writes it, keys unquoted:
// "records[2].payload", "" for the root.
func (p Path) String() string {
	var b strings.Builder
	for _, s := range p {
		if s.Index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.Index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.Key)
	}
	return b.String()
}

// Decode decodes raw, one JSON value, into v, refusing unknown fields,
// anything after the value and what the package refuses. Errors:
// encoding/json's, ErrMore, NotUTF8, RepeatedKey and LoneSurrogate.
func Decode(raw []byte, v any) error {
	if !utf8.Valid(raw) {
		at := firstInvalid(raw)
		if json.Valid(raw) { // then the byte is in a string: name it
			if err := scan(raw, nil, at); err != nil {
				return err
			}
		}
		return NotUTF8{Offset: at}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrMore // what follows, a value or not, would be lost
	}
	return scan(raw, shapeOf(reflect.TypeOf(v)), -1)
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

// scan returns the first RepeatedKey or LoneSurrogate of raw, one valid
// JSON value decoded into root; or, when bad >= 0, the NotUTF8 of the byte
// at bad, in a string of raw, valid JSON but for such bytes. One pass over
// the bytes: a key is a string in
// an object followed by ':', held as raw's bytes unless escaped, the open
// objects' keys in one stack, so that a small body allocates nothing a key;
// a string is unescaped only when it is an escaped key or checked for lone
// surrogates when it holds a '\'; a path is built only for the error.
func scan(raw []byte, root *shape, bad int) error {
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
	path := func(n int) Path { // of the value that the first n frames read
		if n == 0 {
			return nil
		}
		p := make(Path, n)
		for j, f := range stack[:n] {
			p[j] = Step{Index: f.index}
			if f.object {
				p[j] = Step{Key: string(key(j)), Index: -1}
			}
		}
		return p
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
					return io.ErrUnexpectedEOF // not one JSON value, which Decode's decoder refuses first
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
			switch {
			case start < bad && bad < i && isKey:
				return NotUTF8{bad, path(n - 1), true}
			case start < bad && bad < i:
				return NotUTF8{bad, path(n), false}
			case escaped && bad < 0:
				if esc := firstLoneSurrogate(s); esc != "" && isKey {
					return LoneSurrogate{path(n - 1), esc, true}
				} else if esc != "" {
					return LoneSurrogate{path(n), esc, false}
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
			if bad >= 0 {
				keys = append(keys, s) // for the path
				continue               // only bad's string is sought
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
				return RepeatedKey{path(n - 1), first, string(s)}
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

// name is key as scan compares it: folded in a struct's object.
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
