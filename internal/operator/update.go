package operator

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// updateTries bounds the reads of one Update: an operator's changes are
// rare, so a registration changed under five reads in a row is being
// rewritten in a loop, and the operator is told rather than kept waiting.
const updateTries = 5

// Update changes registration stream/id to what change makes of it as
// stored, through store.Store.Update, so that an update another process
// makes meanwhile is never lost: when one came between the read and the
// write, it reads again and calls change again, updateTries times at most.
// It returns the registration as stored after the write. Errors: change's,
// s's; journal.ErrConflict when it changed under every read.
func Update(ctx context.Context, s store.Store, stream, id string, change func(st store.Status) (store.Registration, error)) (store.Status, error) {
	var st store.Status
	err := retryConflicts(registration(stream, id), func() error {
		was, err := s.Get(ctx, stream, id)
		if err != nil {
			return err
		}
		r, err := change(was)
		if err == nil {
			_, err = s.Update(ctx, r, was.Registration)
		}
		if err == nil {
			st, err = s.Get(ctx, stream, id)
		}
		return err
	})
	return st, err
}

// retryConflicts runs try, a read and a write of what (a registration or a
// subscription, named), again while it returns journal.ErrConflict,
// updateTries times at most.
func retryConflicts(what string, try func() error) error {
	for range updateTries {
		if err := try(); !errors.Is(err, journal.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%s changed under each of %d reads: nothing was changed; try again when it has settled: %w",
		what, updateTries, journal.ErrConflict)
}

// registration names registration stream/id for retryConflicts.
func registration(stream, id string) string { return "registration " + store.Name(stream, id) }
