package migrate

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
)

func TestLoadRefusesBrokenSets(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	cases := map[string]struct {
		fs   fstest.MapFS
		says string
	}{
		"a gap": {fstest.MapFS{
			"m/001_a.up.sql": file("x"), "m/001_a.down.sql": file("x"),
			"m/003_c.up.sql": file("x"), "m/003_c.down.sql": file("x"),
		}, "migration 002 is missing"},
		"from 000": {fstest.MapFS{"m/000_a.up.sql": file("x"), "m/000_a.down.sql": file("x")}, "migration 001 is missing"},
		"no down":  {fstest.MapFS{"m/001_a.up.sql": file("x")}, "needs both"},
		"no up":    {fstest.MapFS{"m/001_a.down.sql": file("x")}, "needs both"},
		"empty":    {fstest.MapFS{"m/001_a.up.sql": file(" \n"), "m/001_a.down.sql": file("x")}, "001_a.up.sql is empty"},
		"none":     {fstest.MapFS{"m": &fstest.MapFile{Mode: fs.ModeDir}}, "no migration"},
		"no dir":   {fstest.MapFS{}, "read the migrations"},
		"not .sql": {fstest.MapFS{"m/001_a.up.txt": file("x")}, "is not named NNN_name"},
		"bad name": {fstest.MapFS{"m/1_a.sql": file("x")}, "is not named NNN_name"},
		"two names": {fstest.MapFS{
			"m/001_a.up.sql": file("x"), "m/001_b.down.sql": file("x"),
		}, "has two names"},
	}
	for name, c := range cases {
		_, err := Load(c.fs, "m")
		require.ErrorContains(t, err, c.says, name)
	}
}

func TestLoadReadsBothWaysInOrder(t *testing.T) {
	fsys := fstest.MapFS{
		"m/002_b.up.sql": {Data: []byte("up b")}, "m/002_b.down.sql": {Data: []byte("down b")},
		"m/001_a.up.sql": {Data: []byte("up a")}, "m/001_a.down.sql": {Data: []byte("down a")},
	}
	files, err := Load(fsys, "m")
	require.NoError(t, err)
	require.Equal(t, []File{{1, "a", "up a", "down a"}, {2, "b", "up b", "down b"}}, files)

	s := Set{Files: files, Table: "t"}
	st := s.Status("db", 1, false)
	require.Equal(t, store.SchemaStatus{Database: "db", Current: 1, Latest: 2, Migrations: []store.Migration{
		{Version: 1, Name: "a", Applied: true}, {Version: 2, Name: "b"},
	}}, st)
	require.ErrorIs(t, s.Check(3, false), store.ErrSchemaAhead)
	require.ErrorIs(t, s.Check(2, true), store.ErrSchemaDirty)
	require.ErrorContains(t, s.Check(2, true), "t records version 2 (002_b) as dirty")
	require.NoError(t, s.Check(2, false))
}
