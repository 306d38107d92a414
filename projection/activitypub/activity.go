package activitypub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/heraldpush/herald/journal"
)

// Public is the id of the special Public collection (ActivityPub §5.6).
// Addressing also recognises its compacted forms "as:Public" and "Public".
const Public = "https://www.w3.org/ns/activitystreams#Public"

const asNS = "https://www.w3.org/ns/activitystreams#"

// addressing lists the properties whose values are an activity's audience
// (Activity Streams 2.0 vocabulary §4; ActivityPub §7.1.1).
var addressing = []string{"to", "cc", "bto", "bcc", "audience"}

// hidden lists the properties delivery must remove (ActivityPub §6: "The
// server MUST remove the bto and/or bcc properties, if they exist, from the
// ActivityStreams object before delivery").
var hidden = []string{"bto", "bcc"}

// activity is what the projection reads of a payload: its top-level members.
type activity map[string]json.RawMessage

// parseActivity decodes a payload as a JSON object with a type. Errors wrap
// journal.ErrInvalid.
func parseActivity(payload []byte) (activity, error) {
	var a activity
	if err := json.Unmarshal(payload, &a); err != nil || a == nil {
		return nil, journal.Invalid("payload", "is not a JSON object (an ActivityStreams activity)")
	}
	if _, ok := a.types(); !ok {
		return nil, journal.Invalid("payload", "has no \"type\" (a non-empty string or array of strings)")
	}
	return a, nil
}

// types returns the activity's type values; ok is false when type is absent,
// empty or not a string or an array of strings.
func (a activity) types() (types []string, ok bool) {
	raw, present := a["type"]
	if !present {
		return nil, false
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, one != ""
	}
	if json.Unmarshal(raw, &types) != nil || len(types) == 0 || slices.Contains(types, "") {
		return nil, false
	}
	return types, true
}

// is reports whether the activity has type name (an Activity Streams type,
// given short: "Block"), in any of its usual spellings.
func (a activity) is(name string) bool {
	types, _ := a.types()
	return slices.ContainsFunc(types, func(t string) bool {
		return t == name || t == "as:"+name || t == asNS+name
	})
}

// ids returns the ids a property refers to: a string, an object with a
// string id, or an array of those. Anything else is ignored.
func (a activity) ids(property string) []string {
	var out []string
	for _, v := range a.values(property) {
		if id := refID(v); id != "" {
			out = append(out, id)
		}
	}
	return out
}

// values returns the elements of a property that is an array, else the
// property's one value (none when absent or null).
func (a activity) values(property string) []json.RawMessage {
	raw, ok := a[property]
	if !ok {
		return nil
	}
	var many []json.RawMessage
	if json.Unmarshal(raw, &many) != nil {
		many = []json.RawMessage{raw}
	}
	return many
}

func refID(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		if s, ok := obj.ID.(string); ok {
			return s
		}
	}
	return ""
}

// audience returns every id the activity is addressed to.
func (a activity) audience() []string {
	var out []string
	for _, p := range addressing {
		out = append(out, a.ids(p)...)
	}
	return out
}

func isPublic(id string) bool {
	return id == Public || id == "as:Public" || id == "Public"
}

// needsStripping reports whether the activity, or the object it carries,
// has bto or bcc.
func (a activity) needsStripping() bool {
	return a.hasHidden() || slices.ContainsFunc(a.values("object"), func(v json.RawMessage) bool {
		var obj activity
		return json.Unmarshal(v, &obj) == nil && obj.hasHidden()
	})
}

func (a activity) hasHidden() bool {
	return slices.ContainsFunc(hidden, func(k string) bool { _, ok := a[k]; return ok })
}

// stripHidden returns payload without bto and bcc, at the top level and in
// the embedded object (or each object of an array): a Create copies its
// Note's addressing, so the Note's bcc would leak what the activity's hides.
// Members keep their order and their values' bytes; only the whitespace
// between top-level members is dropped.
func stripHidden(payload []byte) ([]byte, error) {
	return rewriteObject(payload, func(key string, value json.RawMessage) (json.RawMessage, bool, error) {
		switch {
		case slices.Contains(hidden, key):
			return nil, false, nil
		case key == "object":
			v, err := stripObjectValue(value)
			return v, true, err
		}
		return value, true, nil
	})
}

// stripObjectValue strips bto and bcc from an object, or from each object of
// an array; other values (an id string) are returned as they are.
func stripObjectValue(value json.RawMessage) (json.RawMessage, error) {
	drop := func(key string, v json.RawMessage) (json.RawMessage, bool, error) {
		return v, !slices.Contains(hidden, key), nil
	}
	switch firstByte(value) {
	case '{':
		return rewriteObject(value, drop)
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(value, &items); err != nil {
			return nil, err
		}
		var b bytes.Buffer
		b.WriteByte('[')
		for i, item := range items {
			if i > 0 {
				b.WriteByte(',')
			}
			if firstByte(item) == '{' {
				var err error
				if item, err = rewriteObject(item, drop); err != nil {
					return nil, err
				}
			}
			b.Write(item)
		}
		b.WriteByte(']')
		return b.Bytes(), nil
	}
	return value, nil
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// rewriteObject re-encodes a JSON object member by member, in order, passing
// each through f, which returns the value to keep or keep=false to drop the
// member. Values are copied byte for byte.
func rewriteObject(obj []byte, f func(key string, value json.RawMessage) (json.RawMessage, bool, error)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var b bytes.Buffer
	b.Grow(len(obj))
	b.WriteByte('{')
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
		value, keep, err := f(key, value)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		if !keep {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		k, err := json.Marshal(key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(value)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("unterminated JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
