package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestNotUTF8NamesItsString: a byte that is not UTF-8, in JSON otherwise
// valid, is in a string, which the error names as a lone surrogate's: a
// value's path, or the object's whose key it is; in what is not JSON, it
// names nothing.
func TestNotUTF8NamesItsString(t *testing.T) {
	for raw, want := range map[string]NotUTF8{
		"\"a\xff\"":                               {Offset: 2},
		"{\"a\":[1,{\"b\":\"\xfe\"}]}":            {Offset: 14, Path: Path{{Key: "a", Index: -1}, {Index: 1}, {Key: "b", Index: -1}}},
		"{\"a\":{\"x\xc0\":1}}":                   {Offset: 8, Path: Path{{Key: "a", Index: -1}}, Key: true},
		"{\"a\":{\"x\\\"\":1,\"\\u00e9\xff\":2}}": {Offset: 21, Path: Path{{Key: "a", Index: -1}}, Key: true},
		"{\"a\":\"\xff":                           {Offset: 6},
	} {
		var v any
		err := Decode([]byte(raw), &v)
		got, ok := errors.AsType[NotUTF8](err)
		require.True(t, ok, "%q: %v", raw, err)
		require.Equal(t, want, got, "%q", raw)
		require.Equal(t, utf8.RuneError, []rune(raw[want.Offset : want.Offset+1])[0], "%q: the offset is the byte's", raw)
	}
}

// fuzzed is what FuzzDecode decodes into: struct fields (folded), a map
// and data (compared exactly), a type holding itself.
type fuzzed struct {
	ID    string            `json:"id"`
	URL   string            `json:"url"`
	Tags  []string          `json:"tags"`
	Meta  map[string]fuzzed `json:"meta"`
	Data  json.RawMessage   `json:"data"`
	Inner *fuzzed           `json:"inner"`
}

// FuzzDecode: Decode never panics; what it accepts, encoding/json decodes
// to the same value, is UTF-8, and decodes as data (any) too; what it
// refuses with RepeatedKey into a struct but not as data is two keys of
// one field in two cases.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"id":"a","url":"u","tags":["x"],"meta":{"k":{"id":"b"},"K":{}},"data":{"a":1,"A":2},"inner":{"inner":{"ID":"c"}}}`,
		`{"id":"a","ID":"b"}`, `{"meta":{"k":{},"k":{}}}`, `{"data":"\ud83d\ude00\\udcff"}`, `{"id":"\udcff"}`, "{\"id\":\"\xff\"}",
		`{"inner":{"url":1}}`, `{} {}`, `{}}`, `[`, `{"id":"a","\u212Aind":1}`, `{"tags":["a","b"],"Tags":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v fuzzed
		err := Decode(raw, &v)
		var data any
		dataErr := Decode(raw, &data)
		if e, ok := errors.AsType[RepeatedKey](err); ok && dataErr == nil && e.First == e.Key {
			t.Fatalf("%q: %v into a struct, none as data", raw, err)
		}
		if err != nil {
			return
		}
		if !utf8.Valid(raw) {
			t.Fatalf("%q: accepted bytes that are not UTF-8", raw)
		}
		var want fuzzed
		if err := json.Unmarshal(raw, &want); err != nil || !reflect.DeepEqual(v, want) {
			t.Fatalf("%q: decoded %+v; encoding/json %+v, %v", raw, v, want, err)
		}
		if dataErr != nil {
			t.Fatalf("%q: accepted into a struct, refused as data: %v", raw, dataErr)
		}
	})
}

// TestKeysAreEachObjectsOwn: an object's keys are compared with its own
// only, before and after its children's (which share one slice with it),
// with few keys and past 16.
func TestKeysAreEachObjectsOwn(t *testing.T) {
	var many strings.Builder
	for i := range 20 {
		fmt.Fprintf(&many, `"k%d":{"k%d":{"x":1},"x":[{"x":1}]},`, i, i)
	}
	for raw, want := range map[string]error{
		`{"x":1,"a":{"x":2,"b":{"x":3}},"b":{"x":4}}`:           nil,
		`{"a":{"x":1},"b":{"x":2},"x":3,"c":[{"x":1},{"x":2}]}`: nil,
		`{"x":1,"a":{"y":2},"x":3}`:                             RepeatedKey{Path: nil, First: "x", Key: "x"},
		`{"a":{"y":1,"b":{},"y":2}}`:                            RepeatedKey{Path: Path{{Key: "a", Index: -1}}, First: "y", Key: "y"},
		`{` + many.String() + `"x":1}`:                          nil,
		`{` + many.String() + `"k3":1}`:                         RepeatedKey{Path: nil, First: "k3", Key: "k3"},
		`{"a":{` + many.String() + `"k19":{}}}`:                 RepeatedKey{Path: Path{{Key: "a", Index: -1}}, First: "k19", Key: "k19"},
	} {
		var v any
		require.Equal(t, want, Decode([]byte(raw), &v), raw)
	}
}

// FuzzCheckKeysAgreesWithATokenDecoder: on any UTF-8 JSON value (what
// Decode hands it) read as data, the one-pass scan finds the repeated
// key a walk of encoding/json's tokens finds, and names it at the same
// path; the walk is how the check was first written. A lone surrogate,
// which the walk reads as U+FFFD, is operator's
// TestDecodeJSONRefusesWhatItWouldLose's.
func FuzzCheckKeysAgreesWithATokenDecoder(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"p":{"x":[{"y":1,"y":2}]}}`, `[1,"[,{\"",{"a\u0062":0,"ab" : 1}]`,
		`{"x":{"y":1},"y":{"y":2,"y":3}}`, `{"a\\":"x\\\"y","a\\":0}`, `{"":{"":[{}, {"a":1,"b":[],"a":0}]}}`, `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !utf8.Valid(raw) || !json.Valid(raw) {
			return
		}
		got := scan(raw, nil, -1)
		if _, lone := got.(LoneSurrogate); !lone {
			require.Equal(t, repeatedByTokens(t, raw), got, "%s", raw)
		}
	})
}

// repeatedByTokens is the first repeated key in raw, found by a walk of
// encoding/json's tokens that keeps each object's keys and its path.
func repeatedByTokens(t *testing.T, raw []byte) error {
	type frame struct {
		path    Path
		keys    map[string]bool // nil in an array
		wantKey bool            // an object's next token is a key
		key     string          // the key whose value comes next
		next    int             // an array's next index
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // a number past float64's range is JSON too
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		require.NoError(t, err)
		if tok == json.Delim('}') || tok == json.Delim(']') {
			stack = stack[:len(stack)-1]
			continue
		}
		var path Path
		if len(stack) > 0 {
			switch top := stack[len(stack)-1]; {
			case top.wantKey:
				key := tok.(string)
				if top.keys[key] {
					return RepeatedKey{top.path, key, key}
				}
				top.keys[key], top.key, top.wantKey = true, key, false
				continue
			case top.keys != nil:
				path, top.wantKey = append(slices.Clip(top.path), Step{Key: top.key, Index: -1}), true
			default:
				path = append(slices.Clip(top.path), Step{Index: top.next})
				top.next++
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{path: path, keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{path: path})
		}
	}
}
