package push

import "time"

// WithWallClock replaces the wall clock a turn's budget is judged on, so
// that a test can spend the budget at a chosen point without sleeping.
func WithWallClock(now func() time.Time) Option { return func(o *options) { o.Now = now } }
