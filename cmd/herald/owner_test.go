package main_test

import (
	"context"
	"net/url"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/bintest"
	"github.com/heraldpush/herald/internal/pgtest"
)

// TestRunAndSweepRefuseARoleThatIsNotTheSchemasOwner: herald run and sweep
// started as a producer's role (the README's grants) exit 1 at once, naming
// the role and the schema's owner, where run used to serve on, logging a
// permission error on some table at every interval.
func TestRunAndSweepRefuseARoleThatIsNotTheSchemasOwner(t *testing.T) {
	ctx := t.Context()
	db := pgtest.NewDatabase(t)
	newHerald(t, db).ok("migrate", "up")
	conn, err := pgx.Connect(ctx, db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var owner string
	require.NoError(t, conn.QueryRow(ctx, `SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'herald_record'::regclass`).Scan(&owner))
	const role = "herald_producer_not_owner"
	_, err = conn.Exec(ctx, `CREATE ROLE `+role+` LOGIN;
GRANT USAGE ON SCHEMA public TO `+role+`;
GRANT SELECT ON herald_sealed, herald_schema_migrations TO `+role)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = conn.Exec(ctx, `DROP OWNED BY `+role)
		_, _ = conn.Exec(ctx, `DROP ROLE `+role)
	})
	u, err := url.Parse(db)
	require.NoError(t, err)
	u.User = url.User(role)

	for _, args := range [][]string{
		{"sweep", "--namespace", "webhook"},
		{"run", "--metrics-addr", "", "--admin-addr", ""},
	} {
		// The deadline ends a run that serves on; nothing waits on it.
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		cmd := exec.CommandContext(cctx, bin, append([]string{"--database", u.String()}, args...)...)
		cmd.Dir = t.TempDir()
		_, stderr, code := bintest.Run(t, cmd, "")
		cancel()
		require.Equal(t, 1, code, "herald %s as a producer's role: %s", args[0], stderr)
		require.Contains(t, stderr, `role "`+role+`" is not a member of "`+owner+`"`, args[0])
		require.Contains(t, stderr, "herald migrate up", args[0])
	}
}
