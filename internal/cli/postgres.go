package cli

import (
	"context"
	"time"

	"github.com/heraldpush/herald/store/postgres"
)

// openPostgres opens a migrated PostgreSQL database; a schema that is out of
// date is refused (store.ErrSchemaBehind: run herald migrate up). The store
// keeps Listen, so the daemon wakes on other processes' appends
// (LISTEN/NOTIFY).
func openPostgres(ctx context.Context, url string) (backend, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return s, nil
}
