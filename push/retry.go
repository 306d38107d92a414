package push

import "github.com/heraldpush/herald/store"

// RetryPolicy is a registration's retry policy (store.RetryPolicy says each
// field).
type RetryPolicy = store.RetryPolicy

// DefaultRetry is the policy of a namespace whose projection states none:
// store.Backoff's delays, and DefaultMaxAttempts.
var DefaultRetry = RetryPolicy{MaxAttempts: DefaultMaxAttempts}

// RetryDefaulter is a projection that states its namespace's default retry
// policy (each projection's DefaultRetry says why it is what it is).
type RetryDefaulter interface {
	DefaultRetry() RetryPolicy
}
