package journal

import (
	"fmt"
	"mime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// mediaType decides a bare type/subtype without mime.ParseMediaType; every
// content type must get what the parser gives it (the media type, or an
// error), with and without the shortcut.
func TestMediaTypeShortcutAgreesWithTheParser(t *testing.T) {
	parse := func(ct string) (string, error) {
		mt, _, err := mime.ParseMediaType(ct)
		if typ, sub, ok := strings.Cut(mt, "/"); err == nil && (!ok || typ == "" || sub == "" || strings.Contains(sub, "/")) {
			err = fmt.Errorf("want type/subtype")
		}
		return mt, err
	}
	cases := []string{
		"application/json", "Application/JSON", "application/activity+json", "text/plain",
		"application/vnd.api+json", "a/b", "x-Y/z.W_1~!#$%&'*^`|",
		"application/json; charset=utf-8", "text/plain;", "text/plain ; a=b",
		"json", "/json", "application/", "/", "//", "a//b", "a/b/c", "a /b", "a/ b", " a/b", "a/b ",
		"a\x00/b", "a/b\x7f", "a/é", "a(b)/c", "a/b,c", "a/[b]", "a/b?", "a\"/b", "a/b=c", "a@b/c", "a\\b/c",
		"A/B; Q=\"x\"", "text/plain; a=1; a=2", "",
	}
	for c := 0x00; c < 0x80; c++ { // every ASCII byte in the type and in the subtype
		cases = append(cases, fmt.Sprintf("a%cb/c", c), fmt.Sprintf("a/b%cc", c))
	}
	for _, ct := range cases {
		wantMT, wantErr := parse(ct)
		mt, err := mediaType(ct)
		if wantErr != nil {
			require.Error(t, err, "%q", ct)
			require.Equal(t, wantErr.Error(), err.Error(), "%q", ct)
			continue
		}
		require.NoError(t, err, "%q", ct)
		require.Equal(t, wantMT, mt, "%q", ct)
	}
}

// An entry's field is named in the batch, for each check, on the entry that
// fails.
func TestValidateEntriesNamesTheEntryOfTheBatch(t *testing.T) {
	ok := Entry{ID: "a", Kind: "k", Payload: []byte("{}")}
	cases := []struct {
		e     Entry
		field string
	}{
		{Entry{ID: "a", Kind: "k"}, "entries[1].id"}, // repeats entries[0]'s
		{Entry{ID: ReservedIDPrefix + "x", Kind: "k"}, "entries[1].id"},
		{Entry{ID: "b"}, "entries[1].kind"},
		{Entry{ID: "b", Kind: "k", ContentType: "json"}, "entries[1].content_type"},
		{Entry{ID: "b", Kind: "k", Payload: []byte("{")}, "entries[1].payload"},
		{Entry{ID: "b", Kind: "k", Traceparent: "x"}, "entries[1].traceparent"},
		{Entry{ID: "b", Kind: "k", Tracestate: "x=y"}, "entries[1].tracestate"},
		{Entry{ID: "b", Kind: "k", Final: true}, "entries[1].final"},
	}
	for _, c := range cases {
		if c.e.Payload == nil {
			c.e.Payload = []byte("{}")
		}
		_, err := ValidateEntries("s", []Entry{ok, c.e, {ID: "c", Kind: "k", Payload: []byte("{}")}}, 0)
		var ie *InvalidError
		require.ErrorAs(t, err, &ie, "%+v", c.e)
		require.Equal(t, c.field, ie.Field, "%+v: %v", c.e, err)
	}
}

// IsJSONContentType agrees with IsJSON of the parsed media type for every
// valid content type, parameters and case included.
func TestIsJSONContentTypeAgreesWithTheParsedMediaType(t *testing.T) {
	for _, ct := range []string{
		"application/json", "Application/JSON", "application/json; charset=utf-8", "application/activity+json",
		"application/ld+json; profile=\"https://www.w3.org/ns/activitystreams\"", "text/plain", "text/plain; charset=utf-8",
		"application/jsonx", "application/octet-stream", "text/json", "A/B+JSON ; q=1",
	} {
		mt, err := mediaType(ct)
		require.NoError(t, err, ct)
		require.Equal(t, IsJSON(mt), IsJSONContentType(ct), ct)
	}
}
