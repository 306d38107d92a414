package postgres

import "context"

// SQLDueSettings are the planner settings Due's transaction starts with.
var SQLDueSettings = []string{sqlDuePlanner1, sqlDuePlanner2, sqlDuePlanner3}

// The statements of Due, for the tests that EXPLAIN them.
const (
	SQLClearCandidates = sqlClearCandidates
	SQLClaim           = sqlClaim
	SQLUnserved        = sqlUnserved
)

// SchemaVersion is the schema version this binary writes and reads.
func SchemaVersion() int { return schema.Latest() }

// SetStepHook makes every sequencer step of s call f, with its backend's
// process id, after its writes and before its commit.
func SetStepHook(s *Store, f func(pid uint32)) { s.stepHook = f }

// SQLNumber is the sequencer step's statement, for the test that EXPLAINs it.
var SQLNumber = sqlNumber

// SetSequencerPage bounds the records one sequencer step of s numbers.
func SetSequencerPage(s *Store, n int) { s.page = n }

// MigrationLockKey is the SQL expression of the migration lock's key;
// SQLMigrationLock the statement that takes it.
const (
	MigrationLockKey = migrationLockKey
	SQLMigrationLock = sqlMigrationLock
)

// SequenceWaiting is Sequence that waits for the sequencer's lock, as
// Append does.
func SequenceWaiting(ctx context.Context, s *Store) (int, error) { return s.sequence(ctx, seqWait) }

// SQLAnyUnsequenced is the sequencer's probe, which Due runs first.
var SQLAnyUnsequenced = sqlAnyUnsequenced

// NextPoll is RunSequencer's interval after a poll (nextPoll), and the
// bounds it keeps.
var NextPoll = nextPoll

const (
	SequencerPollMin  = sequencerPollMin
	SequencerPollBusy = sequencerPollBusy
	SequencerPollMax  = sequencerPollMax
	SequencerBatch    = sequencerBatch
)

// SQLInsertRecord is the append statement of one entry, for the test that
// EXPLAINs it.
const SQLInsertRecord = sqlInsertRecord

// AdvanceBatch's statements and Due's marker clearing, for the tests of
// their plans.
var (
	SQLFenceBatch   = sqlFenceBatch
	SQLAdvanceBatch = sqlAdvanceBatch
	SQLClearPending = sqlClearPending
)
