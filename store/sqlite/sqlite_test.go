package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store/sqlite"
	"github.com/heraldpush/herald/store/storetest"
)

// openTemp opens a new store in a fresh file under t.TempDir, closed by
// t.Cleanup.
func openTemp(t testing.TB, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "herald.db"), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend { return openTemp(t) })
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
