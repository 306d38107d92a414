package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// OpenTemp opens a new store in a fresh file under t.TempDir, closed (and
// the close checked) by t.Cleanup.
func OpenTemp(t testing.TB, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "herald.db"), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// SchemaVersion is the schema version this binary writes and reads.
var SchemaVersion = schema.Latest

// Check runs SQLite's integrity and foreign key checks: nil when both pass,
// else an error listing what they found.
func (s *Store) Check(ctx context.Context) error {
	var problems []string
	for _, q := range []string{"PRAGMA integrity_check", "PRAGMA foreign_key_check"} {
		rows, err := s.r.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			if len(vals) != 1 || fmt.Sprint(vals[0]) != "ok" {
				problems = append(problems, fmt.Sprint(vals...))
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("sqlite: check: %d problems: %v", len(problems), problems)
	}
	return nil
}
