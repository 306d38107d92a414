package journal_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
)

// InBatch reads back the entry and field that ValidateEntries names, and
// nothing from another field.
func TestInvalidErrorInBatch(t *testing.T) {
	_, err := journal.ValidateEntries("s", []journal.Entry{{ID: "a", Kind: "k", Payload: []byte(`{}`)}, {ID: "b", Kind: "k", ContentType: "not a type"}}, 0)
	var inv *journal.InvalidError
	require.True(t, errors.As(err, &inv), "%v", err)
	i, field, ok := inv.InBatch()
	require.True(t, ok, inv.Field)
	require.Equal(t, 1, i)
	require.Equal(t, "content_type", field)
	require.Contains(t, err.Error(), "invalid entries[1].content_type: ")

	for _, f := range []string{"entries", "stream", "entries[x].id", "entries[-1].id", "entries[2]", "records[0].id"} {
		_, _, ok := (&journal.InvalidError{Field: f}).InBatch()
		require.False(t, ok, f)
	}
}

// A producer's or a caller's long value is cut in the error that quotes it,
// with its length, and a cut never splits a UTF-8 sequence.
func TestInvalidErrorCutsALongValue(t *testing.T) {
	long := strings.Repeat("é", 50000) // 100,000 bytes, two a rune
	err := journal.Invalid("kind", "%q is not a kind", long)
	require.ErrorIs(t, err, journal.ErrInvalid)
	msg := err.Error()
	require.Less(t, len(msg), 512, msg)
	require.Contains(t, msg, strings.Repeat("é", 128)+"… (100000 bytes)")
	require.True(t, utf8.ValidString(msg), msg)

	short := strings.Repeat("a", 200) // a stream name's longest is shown whole
	require.Contains(t, journal.Invalid("stream", "%q", short).Error(), `"`+short+`"`)
	type named string // a field's own string type, as store.RejectPolicy
	require.Contains(t, journal.Invalid("x", "%q", named(long)).Error(), "… (100000 bytes)")
	args := []any{long}
	_ = journal.Invalid("x", "%s", args...)
	require.Equal(t, long, args[0], "the caller's arguments are not changed")
}

// Shown quotes what would not print as itself and cuts, as Invalid does, a
// value past 256 bytes at a character's start, saying its length.
func TestShownQuotesAndBounds(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 `""`,
		"task/1":                           "task/1",
		"a b":                              `"a b"`,
		"\u202eevil":                       `"\u202eevil"`,
		strings.Repeat("a", 256):           strings.Repeat("a", 256),
		strings.Repeat("a", 300):           strings.Repeat("a", 256) + "… (300 bytes)",
		strings.Repeat("é", 200):           strings.Repeat("é", 128) + "… (400 bytes)",
		"\x1b" + strings.Repeat("a", 1000): `"\x1b` + strings.Repeat("a", 255) + `"… (1001 bytes)`,
	} {
		got := journal.Shown(in)
		require.Equal(t, want, got)
		require.True(t, utf8.ValidString(got))
	}
}

// Quoted always quotes, and cuts as Shown does.
func TestQuotedBounds(t *testing.T) {
	require.Equal(t, `"task/1"`, journal.Quoted("task/1"))
	require.Equal(t, `"`+strings.Repeat("a", 256)+`"… (300 bytes)`, journal.Quoted(strings.Repeat("a", 300)))
}
