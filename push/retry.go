package push

import (
	"time"

	"github.com/heraldpush/herald/store"
)

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

// Schedule is a fixed list of delays that replaces store.Backoff's, the
// last repeating (RetryPolicy.Schedule). Standard Webhooks services use 5 s,
// 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
type Schedule []time.Duration
