package dispatch

import (
	"sync"
	"time"

	"github.com/heraldpush/herald/store"
)

// failLog keeps a failing receiver visible before it parks: a log line at a
// registration's first failure, then at most one a minute (of the caller's
// clock) while it keeps failing. A registration whose cursor moves is
// forgotten, so its next failure is a first again.
type failLog struct {
	mu   sync.Mutex
	last map[store.Key]time.Time // the instant of each failing registration's last line
}

// failLogMax bounds the registrations remembered: past it, those not logged
// in the last minute are forgotten (a line more for each, not a leak).
const failLogMax = 10000

// due reports whether the failure of k at at gets a line, and if so
// remembers at.
func (l *failLog) due(k store.Key, at time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.last[k]; ok && !at.Before(prev) && at.Sub(prev) < time.Minute {
		return false
	}
	if l.last == nil {
		l.last = map[store.Key]time.Time{}
	}
	if len(l.last) >= failLogMax {
		for k, prev := range l.last {
			if at.Sub(prev) >= time.Minute || at.Before(prev) {
				delete(l.last, k)
			}
		}
	}
	l.last[k] = at
	return true
}

// forget ends k's run of failures.
func (l *failLog) forget(k store.Key) {
	l.mu.Lock()
	delete(l.last, k)
	l.mu.Unlock()
}
