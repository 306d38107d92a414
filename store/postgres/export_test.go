package postgres

// The statements of Due, for the tests that EXPLAIN them.
const (
	SQLClearCandidates = sqlClearCandidates
	SQLClaim           = sqlClaim
	SQLUnserved        = sqlUnserved
)
