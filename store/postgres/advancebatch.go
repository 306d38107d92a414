package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

var _ push.AdvanceBatcher = (*Store)(nil)

// AdvanceBatch implements push.AdvanceBatcher: the saves' Advances in one
// round trip and one implicit transaction, so one commit (one WAL flush)
// stands for them all, each statement on its generic plan (the queries'
// comment says why). sqlFenceBatch locks the registrations' rows, in key
// order so that two batches never wait on each other in a cycle, and reads
// each one's lease owner and its stream's head; sqlAdvanceBatch is
// sqlAdvance for every save, fenced the same way, and returns the saves it
// applied. Each row is found by its key or its tuple id, so a batch costs
// its rows, not the table. A save that did not apply is told apart as
// fenced does. A save that repeats the key of an earlier one in the batch
// (two turns of one registration, one of them fenced out) is made as an
// Advance of its own after the batch.
func (s *Store) AdvanceBatch(ctx context.Context, saves []push.CursorSave) ([]error, error) {
	errs := make([]error, len(saves))
	type key struct{ stream, id string }
	var (
		seen                 = map[key]bool{}
		idx                  []int // the saves sent, by their place in saves
		later                []int // repeated keys
		streams, ids, owners []string
		nexts                []int64
	)
	for i, sv := range saves {
		c := sv.Claim
		// Advance's checks, in Advance's order, so that a save with two
		// faults gets the error Advance would give it.
		if err := checkCursor(sv.NextSeq); err != nil {
			errs[i] = err
			continue
		}
		if err := c.Validate(); err != nil {
			errs[i] = err
			continue
		}
		if !validKey(c.Stream, c.ID) {
			errs[i] = notFound(c.Stream, c.ID)
			continue
		}
		k := key{c.Stream, c.ID}
		if seen[k] {
			later = append(later, i)
			continue
		}
		seen[k] = true
		idx = append(idx, i)
	}
	// Key order is the lock order: two batches never wait on each other
	// in a cycle.
	slices.SortFunc(idx, func(a, b int) int {
		ca, cb := saves[a].Claim, saves[b].Claim
		return cmp.Or(strings.Compare(ca.Stream, cb.Stream), strings.Compare(ca.ID, cb.ID))
	})
	for _, i := range idx {
		c := saves[i].Claim
		streams, ids, owners, nexts = append(streams, c.Stream), append(ids, c.ID), append(owners, c.Owner), append(nexts, int64(saves[i].NextSeq))
	}
	if len(idx) > 0 {
		type fence struct {
			owner string
			head  int64
		}
		found := make(map[int]fence, len(idx)) // by ordinality, 1-based
		applied := make(map[int]bool, len(idx))
		b := &pgx.Batch{}
		b.Queue(sqlGenericPlans)
		b.Queue(sqlFenceBatch, streams, ids).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				var (
					ord int
					f   fence
				)
				if err := rows.Scan(&ord, &f.owner, &f.head); err != nil {
					return err
				}
				found[ord] = f
			}
			return rows.Err()
		})
		b.Queue(sqlAdvanceBatch, streams, ids, owners, nexts).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				var ord int
				if err := rows.Scan(&ord); err != nil {
					return err
				}
				applied[ord] = true
			}
			return rows.Err()
		})
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return nil, s.dbErr(ctx, "advance a batch", err)
		}
		for j, i := range idx {
			ord, c := j+1, saves[i].Claim
			f, ok := found[ord]
			switch {
			case applied[ord]:
			case !ok:
				errs[i] = notFound(c.Stream, c.ID)
			case f.owner != c.Owner:
				errs[i] = fmt.Errorf("advance %s under the lease of %s: %w", push.Name(c.Stream, c.ID), c.Owner, push.ErrLeaseLost)
			default:
				if err := store.ValidateCursor(saves[i].NextSeq, uint64(f.head)); err != nil {
					errs[i] = err
				} else {
					errs[i] = fmt.Errorf("postgres: advance %s: the write did not apply under a held lease and a valid cursor", push.Name(c.Stream, c.ID))
				}
			}
		}
	}
	for _, i := range later {
		errs[i] = s.Advance(ctx, saves[i].Claim, saves[i].NextSeq)
	}
	return errs, nil
}
