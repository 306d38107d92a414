package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/heraldpush/herald/store"
)

// The schema lives in migrations/NNN_name.up.sql and NNN_name.down.sql,
// embedded in the binary. goose applies them (each in one transaction with
// its version row), records versions in herald_schema_version, and holds a
// session advisory lock while migrating, so that two `herald migrate up`
// run at once apply each migration once.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable is where goose records the applied versions.
const versionTable = "herald_schema_version"

// migrationLockID is the advisory lock goose holds while migrating: the first
// eight bytes of "herald" in ASCII, so it cannot collide with goose's default
// lock of another application in the same database.
const migrationLockID = 0x68657261_6c64

// Migration is one schema migration and whether it is applied.
type Migration struct {
	Version   int64     `json:"version"`             // 1, 2, …: the NNN of its file name
	Name      string    `json:"name"`                // e.g. "001_init"
	Applied   bool      `json:"applied"`             // recorded in herald_schema_version
	AppliedAt time.Time `json:"applied_at,omitzero"` // when (the server's clock), if applied
}

type migrationSource struct {
	version  int64
	name     string
	up, down string
}

var migrationName = regexp.MustCompile(`^(\d{3})_([a-z0-9_]+)\.(up|down)\.sql$`)

// loadMigrations reads the embedded files: versions 1..n, each with an up
// and a down file.
func loadMigrations() ([]migrationSource, error) {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	byVersion := map[int64]*migrationSource{}
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("store/postgres: migration file %q is not named NNN_name.up.sql or NNN_name.down.sql", e.Name())
		}
		v, _ := strconv.ParseInt(m[1], 10, 64)
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		src := byVersion[v]
		if src == nil {
			src = &migrationSource{version: v, name: m[1] + "_" + m[2]}
			byVersion[v] = src
		}
		if src.name != m[1]+"_"+m[2] {
			return nil, fmt.Errorf("store/postgres: migration %d has two names: %s and %s", v, src.name, m[1]+"_"+m[2])
		}
		if m[3] == "up" {
			src.up = string(body)
		} else {
			src.down = string(body)
		}
	}
	out := make([]migrationSource, 0, len(byVersion))
	for _, src := range byVersion {
		if src.up == "" || src.down == "" {
			return nil, fmt.Errorf("store/postgres: migration %s needs both an up and a down file", src.name)
		}
		out = append(out, *src)
	}
	slices.SortFunc(out, func(a, b migrationSource) int { return int(a.version - b.version) })
	for i, src := range out {
		if src.version != int64(i+1) {
			return nil, fmt.Errorf("store/postgres: migrations must be numbered 1, 2, 3…; %s is out of sequence", src.name)
		}
	}
	return out, nil
}

// SchemaVersion is the schema version this binary works with: the number of
// its newest migration.
func SchemaVersion() int64 {
	srcs, err := loadMigrations()
	if err != nil || len(srcs) == 0 {
		return 0
	}
	return srcs[len(srcs)-1].version
}

// migrator wraps a goose provider over the pool.
type migrator struct {
	db       *sql.DB
	provider *goose.Provider
	sources  []migrationSource
}

func newMigrator(pool *pgxpool.Pool) (*migrator, error) {
	srcs, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	gos := make([]*goose.Migration, len(srcs))
	for i, src := range srcs {
		gos[i] = goose.NewGoMigration(src.version, execFunc(src.up), execFunc(src.down))
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, nil,
		goose.WithTableName(versionTable),
		goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(gos...),
		goose.WithSessionLocker(locker),
		goose.WithSlog(slog.New(slog.NewTextHandler(io.Discard, nil))),
	)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &migrator{db: db, provider: p, sources: srcs}, nil
}

func execFunc(sqlText string) *goose.GoFunc {
	return &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, sqlText)
		return err
	}}
}

func (m *migrator) close() { m.db.Close() }

func (m *migrator) name(version int64) string {
	for _, s := range m.sources {
		if s.version == version {
			return s.name
		}
	}
	return strconv.FormatInt(version, 10)
}

// MigrateUp applies every pending migration, in order, each in its own
// transaction, and returns those it applied (none when the schema is
// current). It first checks that the database is herald's or empty of
// herald tables: errors wrap store.ErrNotHerald or store.ErrSchemaAhead, or
// the database's failure.
func MigrateUp(ctx context.Context, pool *pgxpool.Pool) ([]Migration, error) {
	if _, err := readVersion(ctx, pool); err != nil && !errors.Is(err, store.ErrSchemaBehind) {
		return nil, err
	}
	m, err := newMigrator(pool)
	if err != nil {
		return nil, err
	}
	defer m.close()
	results, err := m.provider.Up(ctx)
	out := make([]Migration, 0, len(results))
	for _, r := range results {
		if r.Error == nil {
			out = append(out, Migration{Version: r.Source.Version, Name: m.name(r.Source.Version), Applied: true})
		}
	}
	if err != nil {
		return out, dbError(ctx, "migrate up", err)
	}
	return out, nil
}

// MigrateDown rolls back the newest applied migration (one step) and returns
// it. Rolling back version 1 drops every herald table and its data. Errors:
// ErrNothingToMigrate when no migration is applied, store.ErrNotHerald,
// store.ErrSchemaAhead (never migrate down what a newer herald wrote), or
// the database's failure.
func MigrateDown(ctx context.Context, pool *pgxpool.Pool) (Migration, error) {
	v, err := readVersion(ctx, pool)
	switch {
	case errors.Is(err, store.ErrSchemaBehind) && v == 0:
		return Migration{}, ErrNothingToMigrate
	case err != nil && !errors.Is(err, store.ErrSchemaBehind):
		return Migration{}, err
	}
	m, err := newMigrator(pool)
	if err != nil {
		return Migration{}, err
	}
	defer m.close()
	r, err := m.provider.Down(ctx)
	if errors.Is(err, goose.ErrNoNextVersion) {
		return Migration{}, ErrNothingToMigrate
	}
	if err != nil {
		return Migration{}, dbError(ctx, "migrate down", err)
	}
	return Migration{Version: r.Source.Version, Name: m.name(r.Source.Version)}, nil
}

// ErrNothingToMigrate is MigrateDown's error when no migration is applied.
var ErrNothingToMigrate = errors.New("store/postgres: no migration is applied: nothing to migrate down")

// MigrationStatus lists every migration this binary knows, with whether and
// when it was applied. It changes nothing (not even creating the version
// table). Errors: store.ErrNotHerald, store.ErrSchemaAhead, or the
// database's failure.
func MigrationStatus(ctx context.Context, pool *pgxpool.Pool) ([]Migration, error) {
	srcs, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	out := make([]Migration, len(srcs))
	for i, s := range srcs {
		out[i] = Migration{Version: s.version, Name: s.name}
	}
	if _, err := readVersion(ctx, pool); err != nil && !errors.Is(err, store.ErrSchemaBehind) {
		return out, err
	}
	var exists bool
	if err := pool.QueryRow(ctx, sqlVersionTableExists, versionTable).Scan(&exists); err != nil {
		return out, dbError(ctx, "migration status", err)
	}
	if !exists {
		return out, nil
	}
	rows, err := pool.Query(ctx, sqlAppliedVersions)
	if err != nil {
		return out, dbError(ctx, "migration status", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		var at time.Time
		if err := rows.Scan(&v, &at); err != nil {
			return out, dbError(ctx, "migration status", err)
		}
		if v >= 1 && v <= int64(len(out)) {
			out[v-1].Applied, out[v-1].AppliedAt = true, at.UTC()
		}
	}
	return out, dbError(ctx, "migration status", rows.Err())
}

// readVersion returns the schema version of the database behind pool and
// checks it against this binary's, changing nothing. Errors wrap
// store.ErrSchemaBehind (with the version found, 0 for none),
// store.ErrSchemaAhead or store.ErrNotHerald.
func readVersion(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	want := SchemaVersion()
	var tableExists, heraldTables bool
	if err := pool.QueryRow(ctx, sqlSchemaProbe, versionTable).Scan(&tableExists, &heraldTables); err != nil {
		return 0, dbError(ctx, "check schema version", err)
	}
	if !tableExists {
		if heraldTables {
			return 0, fmt.Errorf("store/postgres: the database has herald tables but no %s table recording their version: %w", versionTable, store.ErrNotHerald)
		}
		return 0, fmt.Errorf("store/postgres: the database has no herald schema (version 0, this herald needs %d): %w", want, store.ErrSchemaBehind)
	}
	var shaped bool
	if err := pool.QueryRow(ctx, sqlVersionTableShape, versionTable).Scan(&shaped); err != nil {
		return 0, dbError(ctx, "check schema version", err)
	}
	if !shaped {
		return 0, fmt.Errorf("store/postgres: table %s is not a herald version table: %w", versionTable, store.ErrNotHerald)
	}
	var got int64
	if err := pool.QueryRow(ctx, sqlCurrentVersion).Scan(&got); err != nil {
		return 0, dbError(ctx, "check schema version", err)
	}
	switch {
	case got < want:
		return got, fmt.Errorf("store/postgres: the database schema is version %d, this herald needs %d: %w", got, want, store.ErrSchemaBehind)
	case got > want:
		return got, fmt.Errorf("store/postgres: the database schema is version %d, this herald knows up to %d: %w", got, want, store.ErrSchemaAhead)
	}
	return got, nil
}
