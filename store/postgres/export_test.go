package postgres

// SQLDueSettings are the planner settings Due's transaction starts with.
var SQLDueSettings = []string{sqlDuePlanner1, sqlDuePlanner2}

// The statements of Due, for the tests that EXPLAIN them.
const (
	SQLClearCandidates = sqlClearCandidates
	SQLClaim           = sqlClaim
	SQLUnserved        = sqlUnserved
)
