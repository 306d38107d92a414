package activitypub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
)

// Public is the id of the Public collection (ActivityPub §5.6); its
// compacted forms "as:Public" and "Public" count too.
const Public = "https://www.w3.org/ns/activitystreams#Public"

const asNS = "https://www.w3.org/ns/activitystreams#"

// An activity's audience properties (ActivityPub §7.1.1), and the hidden ones.
var (
	addressing = []string{"to", "cc", "bto", "bcc", "audience"}
	hidden     = []string{"bto", "bcc"}
)

type activity map[string]json.RawMessage

// parseActivity decodes a payload as a JSON object with a type.
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

// parsed is a payload's activity and the body sent for it (without bto
// and bcc), shared and never written.
type parsed struct {
	activity activity
	body     []byte
}

// parse parses payload and makes the body sent for it; errors wrap
// journal.ErrInvalid.
func parse(payload []byte) (*parsed, error) {
	a, err := parseActivity(payload)
	if err != nil {
		return nil, err
	}
	body := payload
	if a.needsStripping() {
		if body, err = stripHidden(payload); err != nil {
			return nil, fmt.Errorf("remove bto/bcc: %w", journal.Invalid("payload", "%v", err))
		}
	}
	return &parsed{activity: a, body: body}, nil
}

// activities keeps the parsed forms of the last payloads of at most
// maxPayload bytes, by their bytes: the same record goes to every inbox of
// its audience, and a key is the payload itself, so a payload never gets
// another's activity. Errors are not kept.
type activities struct {
	*projconfig.Cache[*parsed]
	maxPayload int
}

func newActivities(size, maxPayload int) *activities {
	return &activities{projconfig.NewCache[*parsed](size), maxPayload}
}

// get returns payload's parsed form, parsing it on a miss (outside the
// lock).
func (c *activities) get(payload []byte) (*parsed, error) {
	if v, ok := c.Get(payload); ok {
		return v, nil
	}
	v, err := parse(payload)
	if err != nil || len(payload) > c.maxPayload {
		return v, err
	}
	key := string(payload) // a copy: the record's bytes are the caller's
	if len(v.body) > 0 && &v.body[0] == &payload[0] {
		v.body = []byte(key) // nor is the body kept from them
	}
	c.Add(key, v)
	return v, nil
}

// types returns the activity's type values; ok is false unless type is a
// non-empty string or array of them.
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

// values returns the elements of a property that is an array, else its one
// value.
func (a activity) values(property string) []json.RawMessage {
	raw, ok := a[property]
	var many []json.RawMessage
	if ok && json.Unmarshal(raw, &many) != nil {
		many = []json.RawMessage{raw}
	}
	return many
}

// ids returns the ids a property refers to: strings and the string ids of
// objects.
func (a activity) ids(property string) []string {
	var out []string
	for _, v := range a.values(property) {
		var id string
		if json.Unmarshal(v, &id) != nil {
			var obj struct {
				ID any `json:"id"`
			}
			_ = json.Unmarshal(v, &obj)
			id, _ = obj.ID.(string)
		}
		if id != "" {
			out = append(out, id)
		}
	}
	return out
}

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
// the embedded object (or each object of an array). Only the whitespace
// between the members of a rewritten object is dropped.
func stripHidden(payload []byte) ([]byte, error) {
	return withoutHidden(payload, func(key string, v json.RawMessage) (json.RawMessage, error) {
		switch {
		case key != "object":
			return v, nil
		case firstByte(v) == '{':
			return withoutHidden(v, nil)
		case firstByte(v) != '[':
			return v, nil // an id
		}
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, err
		}
		b := []byte{'['}
		for i, item := range items {
			if i > 0 {
				b = append(b, ',')
			}
			if firstByte(item) == '{' {
				var err error
				if item, err = withoutHidden(item, nil); err != nil {
					return nil, err
				}
			}
			b = append(b, item...)
		}
		return append(b, ']'), nil
	})
}

func firstByte(b []byte) byte {
	if b = bytes.TrimLeft(b, " \t\r\n"); len(b) == 0 {
		return 0
	}
	return b[0]
}

// withoutHidden re-encodes a JSON object member by member, in order,
// without bto and bcc, passing each other value through f (nil: kept).
func withoutHidden(obj []byte, f func(key string, v json.RawMessage) (json.RawMessage, error)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	b := bytes.NewBuffer(make([]byte, 0, len(obj)))
	b.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if slices.Contains(hidden, key) {
			continue
		}
		if f != nil {
			if v, err = f(key, v); err != nil {
				return nil, fmt.Errorf("%q: %w", key, err)
			}
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key) // a string always encodes
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
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
