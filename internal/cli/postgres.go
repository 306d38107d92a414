package cli

import (
	"context"
	"time"

	"github.com/heraldpush/herald/store/postgres"
)

// pgBackend adapts *postgres.Store to backend; it keeps Listen, so the
// daemon wakes on other processes' appends (LISTEN/NOTIFY).
type pgBackend struct{ *postgres.Store }

func (b pgBackend) Close() error {
	b.Store.Close()
	return nil
}

// openPostgres opens a migrated PostgreSQL database; a schema that is out of
// date is refused (store.ErrSchemaBehind: run herald migrate up).
func openPostgres(ctx context.Context, url string) (backend, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return pgBackend{s}, nil
}

func migratePostgres(ctx context.Context, d database, verb string) (schemaStatus, error) {
	var (
		st  postgres.SchemaStatus
		err error
	)
	switch verb {
	case "up":
		st, err = postgres.MigrateUp(ctx, d.url)
	case "down":
		st, err = postgres.MigrateDown(ctx, d.url)
	default:
		st, err = postgres.MigrationStatus(ctx, d.url)
	}
	if err != nil {
		return schemaStatus{}, err
	}
	out := schemaStatus{Database: d.String(), Current: st.Current, Latest: st.Latest, Dirty: st.Dirty}
	for _, m := range st.Migrations {
		out.Migrations = append(out.Migrations, migrationView{Version: m.Version, Name: m.Name, Applied: m.Applied})
	}
	return out, nil
}
