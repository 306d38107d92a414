package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
)

// TestReadIsAnIndexRange: a page's byte bound is summed over the stream's
// index range under the limit; no part of Read's query scans the records.
func TestReadIsAnIndexRange(t *testing.T) {
	s := OpenTemp(t)
	ctx := context.Background()
	for i := range 20 {
		es := make([]journal.Entry, 50)
		for j := range es {
			es[j] = journal.Entry{ID: fmt.Sprintf("s%d/%d", i, j), Kind: "k", Payload: []byte(`{}`)}
		}
		_, err := s.Append(ctx, fmt.Sprintf("s%d", i), es...)
		require.NoError(t, err)
	}
	_, err := s.w.Exec("ANALYZE")
	require.NoError(t, err)
	plan := queryPlan(t, s.r, stmt("read"), "s3", 10, 256, 1<<20)
	require.Equal(t, 2, strings.Count(plan, "SEARCH herald_record USING INDEX sqlite_autoindex_herald_record_2 (stream=? AND seq>?"), "plan:\n%s", plan)
	require.NotContains(t, plan, "SCAN herald_record", "plan:\n%s", plan)
}
