package journal_test

import (
	"errors"
	"testing"

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
