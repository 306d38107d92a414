package cli

import (
	"context"
	"time"

	"github.com/heraldpush/herald/store/postgres"
)

// openPostgres opens a migrated PostgreSQL database; a schema that is out of
// date is refused (store.ErrSchemaBehind: run herald migrate up). The store
// keeps Listen, so the daemon wakes on other processes' appends
// (LISTEN/NOTIFY). seqEvery, if not 0, is the sequencer's longest interval
// while records come (postgres.WithSequencerInterval).
func openPostgres(ctx context.Context, url string, seqEvery time.Duration) (backend, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var opts []postgres.Option
	if seqEvery != 0 {
		opts = append(opts, postgres.WithSequencerInterval(seqEvery))
	}
	s, err := postgres.Open(ctx, url, opts...)
	if err != nil {
		return nil, err
	}
	return s, nil
}
