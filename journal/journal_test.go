package journal_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
)

func TestValidateEntriesNamesTheField(t *testing.T) {
	cases := []struct {
		name   string
		stream string
		e      journal.Entry
		field  string
		reason string
	}{
		{"stream too long", strings.Repeat("x", 201), journal.Entry{ID: "a", Kind: "k"}, "stream", "longer than 200 bytes (201)"},
		{"stream with space", "a b", journal.Entry{ID: "a", Kind: "k"}, "stream", "whitespace U+0020 at byte 1"},
		{"id with newline", "s", journal.Entry{ID: "a\nb", Kind: "k"}, "entries[0].id", "control character U+000A at byte 1"},
		{"id with line separator", "s", journal.Entry{ID: "a\u2028", Kind: "k"}, "entries[0].id", "control character U+2028"},
		{"no kind", "s", journal.Entry{ID: "a"}, "entries[0].kind", "is empty"},
		{"bad json", "s", journal.Entry{ID: "a", Kind: "k", Payload: []byte("{")}, "entries[0].payload", "not valid JSON"},
		{"bad media type", "s", journal.Entry{ID: "a", Kind: "k", ContentType: "json"}, "entries[0].content_type", "not a media type"},
	}
	for _, c := range cases {
		_, err := journal.ValidateEntries(c.stream, []journal.Entry{c.e}, 0)
		var ie *journal.InvalidError
		require.True(t, errors.As(err, &ie), c.name)
		require.Equal(t, c.field, ie.Field, c.name)
		require.Contains(t, ie.Reason, c.reason, c.name)
		require.ErrorIs(t, err, journal.ErrInvalid)
	}
}

func TestValidateEntriesDefaultsAndLimits(t *testing.T) {
	out, err := journal.ValidateEntries("s", []journal.Entry{{ID: "a", Kind: "k", Payload: []byte(`{}`)}}, 0)
	require.NoError(t, err)
	require.Equal(t, journal.DefaultContentType, out[0].ContentType)

	big := journal.Entry{ID: "a", Kind: "k", ContentType: "text/plain", Payload: make([]byte, 11)}
	_, err = journal.ValidateEntries("s", []journal.Entry{big}, 10)
	require.ErrorContains(t, err, "11 bytes, more than the limit of 10")
	_, err = journal.ValidateEntries("s", []journal.Entry{big}, 11)
	require.NoError(t, err)

	for _, ct := range []string{"application/activity+json", "application/ld+json; profile=\"https://www.w3.org/ns/activitystreams\"", "APPLICATION/JSON"} {
		_, err := journal.ValidateEntries("s", []journal.Entry{{ID: "a", Kind: "k", ContentType: ct, Payload: []byte("nope")}}, 0)
		require.ErrorIs(t, err, journal.ErrInvalid, "%s requires JSON", ct)
	}
}

func TestDigestDistinguishesEveryField(t *testing.T) {
	base := journal.Entry{ID: "a", Kind: "k", ContentType: "application/json", Payload: []byte(`{}`)}
	d := journal.Digest("s", base)
	require.Equal(t, d, journal.Digest("s", journal.Entry{ID: "other-id", Kind: "k", Payload: []byte(`{}`)}),
		"the id is the key, not content; an empty content type is the default")
	variants := []struct {
		stream string
		e      journal.Entry
	}{
		{"s2", base},
		{"s", journal.Entry{ID: "a", Kind: "k2", ContentType: base.ContentType, Payload: base.Payload}},
		{"s", journal.Entry{ID: "a", Kind: "k", ContentType: "text/plain", Payload: base.Payload}},
		{"s", journal.Entry{ID: "a", Kind: "k", ContentType: base.ContentType, Payload: []byte(`{ }`)}},
		{"s", journal.Entry{ID: "a", Kind: "k", ContentType: base.ContentType, Payload: base.Payload, Final: true}},
		// Length prefixes: moving bytes between fields changes the digest.
		{"sk", journal.Entry{ID: "a", Kind: "", ContentType: base.ContentType, Payload: base.Payload}},
	}
	for i, v := range variants {
		require.NotEqual(t, d, journal.Digest(v.stream, v.e), "variant %d", i)
	}
}

// FuzzValidateEntries: validation never panics, and what it accepts is what
// a store can keep: valid UTF-8 names without control characters, within
// the limits.
func FuzzValidateEntries(f *testing.F) {
	f.Add("actor/alice", "https://example.com/1", "Create", "application/activity+json", []byte(`{"type":"Create"}`), false)
	f.Add("task/8f3c", "evt\x00", "k", "", []byte(`{}`), true)
	f.Add("s p", "id", "kind", "text/plain; charset=utf-8", []byte("\xff"), false)
	f.Add("\xffs", "\u2028", "k k", "application/json;;", []byte(`[`), false)
	f.Fuzz(func(t *testing.T, stream, id, kind, ct string, payload []byte, final bool) {
		out, err := journal.ValidateEntries(stream, []journal.Entry{{ID: id, Kind: kind, ContentType: ct, Payload: payload, Final: final}}, 1024)
		if err != nil {
			require.ErrorIs(t, err, journal.ErrInvalid)
			return
		}
		require.True(t, utf8.ValidString(stream) && utf8.ValidString(id) && utf8.ValidString(kind))
		require.LessOrEqual(t, len(stream), journal.MaxStreamBytes)
		require.LessOrEqual(t, len(id), journal.MaxIDBytes)
		require.NotContains(t, stream, " ")
		require.NotEmpty(t, out[0].ContentType)
		require.LessOrEqual(t, len(payload), 1024)
	})
}
