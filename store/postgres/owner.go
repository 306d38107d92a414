package postgres

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotOwner: the connection's role does not act as herald's schema owner,
// as a daemon, a sweep and herald's own events need.
var ErrNotOwner = errors.New("not the owner of herald's schema")

// CheckOwner returns nil if the connection's role is the schema's owner (the
// role that ran herald migrate up) or a member inheriting its privileges:
// herald run and sweep check it at start, so that a producer's role is
// refused at once, naming both, rather than at each table it has no grant
// on. Errors: ErrNotOwner, ErrUnavailable.
func (s *Store) CheckOwner(ctx context.Context) error {
	var role, owner string
	var ok bool
	if err := s.pool.QueryRow(ctx, stmt("owner")).Scan(&role, &owner, &ok); err != nil {
		return s.dbErr(ctx, "check the role", err)
	}
	if !ok {
		return fmt.Errorf("postgres: role %q is not a member of %q, the owner of herald's schema (the role that ran herald migrate up): herald run and sweep need that role, or one granted it; a producer's role only appends (AppendTx, herald_append): %w",
			role, owner, ErrNotOwner)
	}
	return nil
}
