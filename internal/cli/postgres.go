package cli

import (
	"context"
	"errors"
)

// Placeholder until store/postgres lands on this branch.
func openPostgres(ctx context.Context, url string) (backend, error) {
	return nil, errors.New("postgres is not wired yet")
}

func migratePostgres(ctx context.Context, d database, verb string) (schemaStatus, error) {
	return schemaStatus{}, errors.New("postgres is not wired yet")
}
