package cli

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An append --file stopped half way, after its first transaction
// committed, exits 1, not 2: exit 2 says nothing was changed, and the
// records of the first transaction are stored (the error says how many).
// The stop is another writer's id taking the second transaction's place,
// played here by a trigger that makes its first insert a unique violation.
func TestAppendStoppedHalfWayIsNotAUsageError(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	heraldOK(t, db, "", "migrate", "up")
	conn, err := sql.Open("sqlite", db)
	require.NoError(t, err)
	_, err = conn.Exec(fmt.Sprintf(`CREATE TRIGGER taken BEFORE INSERT ON herald_record WHEN NEW.id = 'evt-%d'
BEGIN INSERT INTO herald_record SELECT * FROM herald_record LIMIT 1; END`, appendBatch+1))
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	var lines strings.Builder
	for i := 1; i <= appendBatch+1; i++ {
		fmt.Fprintf(&lines, `{"id": "evt-%d", "kind": "k", "payload": {}}`+"\n", i)
	}
	file := filepath.Join(dir, "records.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(lines.String()), 0o600))

	r := runCLI(t, db, "", "append", "--stream", "s", "--file", file)
	require.Contains(t, r.stderr, fmt.Sprintf("%d records stored before it", appendBatch), r.stderr)
	require.Equal(t, ExitError, r.code, "records were stored: not exit 2 (nothing was changed)\n%s", r.stderr)
}
