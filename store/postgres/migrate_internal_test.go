package postgres

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestEmbeddedMigrationsAreNumberedAndReversible(t *testing.T) {
	ms, err := loadMigrations(migrationFiles)
	require.NoError(t, err)
	require.Equal(t, len(ms), SchemaVersion())
	for i, m := range ms {
		require.Equal(t, i+1, m.Version)
		require.NotEmpty(t, m.Name)
	}
}

func TestBrokenMigrationSetsAreRefused(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	cases := map[string]struct {
		fs   fstest.MapFS
		says string
	}{
		"a gap": {fstest.MapFS{
			"migrations/001_a.up.sql": file("x"), "migrations/001_a.down.sql": file("x"),
			"migrations/003_c.up.sql": file("x"), "migrations/003_c.down.sql": file("x"),
		}, "migration 002 is missing"},
		"no down":  {fstest.MapFS{"migrations/001_a.up.sql": file("x")}, "needs both"},
		"bad name": {fstest.MapFS{"migrations/1_a.sql": file("x")}, "is not named NNN_name"},
		"two names": {fstest.MapFS{
			"migrations/001_a.up.sql": file("x"), "migrations/001_b.down.sql": file("x"),
		}, "has two names"},
	}
	for name, c := range cases {
		_, err := loadMigrations(c.fs)
		require.ErrorContains(t, err, c.says, name)
	}
}
