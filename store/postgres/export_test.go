package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the schema version this binary writes and reads.
func SchemaVersion() int { return schema.Latest() }

// SetStepHook makes every sequencer step of s call f, with its backend's
// process id, after its writes and before its commit.
func SetStepHook(s *Store, f func(pid uint32)) { s.stepHook = f }

// SetSequencerPage bounds the records one sequencer step of s numbers.
func SetSequencerPage(s *Store, n int) { s.page = n }

// SequenceWaiting is Sequence that waits for the sequencer's lock, as
// Append does.
func SequenceWaiting(ctx context.Context, s *Store) (int, error) {
	return s.sequence(ctx, nil, seqWait, nil)
}

// NextPoll is RunSequencer's interval after a poll.
var NextPoll = nextPoll

const SequencerBatch = sequencerBatch

// PickDepth is how many rows of each cursor Due's first pick reads, per
// registration it may claim.
const PickDepth = pickDepth

// The statements the tests EXPLAIN or find in pg_prepared_statements, and
// the settings Due's transaction starts with.
var (
	SQLPlanner         = sqlPlanner
	SQLPick            = sent(stmt("pick"))
	SQLClaim           = sent(stmt("claim"))
	SQLUnserved        = sent(stmt("unserved"))
	SQLClearCandidates = sent(stmt("clear_candidates"))
	SQLClearPending    = sent(stmt("clear_pending"))
	SQLAnyUnsequenced  = stmt("any_unsequenced")
	SQLNumber          = sent(stmt("number"))
	SQLFenceBatch      = sent(stmt("fence_batch"))
	SQLAdvanceBatch    = sent(stmt("advance_batch"))
	MigrationLockKey   = migrationLockKey
	SQLMigrationLock   = sqlMigrationLock
)

// sent is a statement of sql/*.sql as pgx sends it: its named parameters
// numbered.
func sent(sql string) string {
	q, _, err := pgx.NamedArgs{}.RewriteQuery(context.Background(), nil, sql, nil)
	if err != nil {
		panic(err)
	}
	return q
}
