package push

import "time"

// Schedule is a fixed list of delays that replaces Backoff: the n-th failure
// (0-based) waits Schedule[min(n, len-1)]. Standard Webhooks services use 5 s,
// 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
type Schedule []time.Duration

// Delay returns the delay after failures earlier failures; an empty
// schedule (which NewWorker refuses) waits 1 s rather than panic.
func (s Schedule) Delay(failures int) time.Duration {
	if len(s) == 0 {
		return time.Second
	}
	return s[min(max(failures, 0), len(s)-1)]
}
