package postgres

import (
	"sync"
	"time"
)

// SealCheckInterval is how long a Store trusts that a stream it found open
// is still open, unless WithSealCheckInterval says otherwise: while it
// does, an append of ordinary records to that stream skips the seal probes
// (package doc, "Sealing").
const SealCheckInterval = time.Second

// maxOpenStreams bounds the streams a Store remembers as open.
const maxOpenStreams = 16_384

// openStreams remembers, per stream, when an append last found it open (not
// sealed, no final record committed), or that the Store appended a final
// record to it or was refused (the zero time): such a stream is probed at
// every append, which also closes the race of this Store's own appends with
// its own final record. Monotonic time: it ages a cache, it stamps nothing.
type openStreams struct {
	mu    sync.Mutex
	every time.Duration // SealCheckInterval; 0 checks every append (tests)
	seen  map[string]time.Time
}

// trusted reports whether an append to stream may skip the seal probes.
func (o *openStreams) trusted(stream string) bool {
	if o.every <= 0 {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	at, ok := o.seen[stream]
	return ok && !at.IsZero() && time.Since(at) < o.every
}

// found records that a probing append found stream open.
func (o *openStreams) found(stream string) {
	if o.every > 0 {
		o.set(stream, time.Now())
	}
}

// distrust makes every later append to stream probe: the Store appended a
// final record to it, or was refused.
func (o *openStreams) distrust(stream string) { o.set(stream, time.Time{}) }

func (o *openStreams) set(stream string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if last, ok := o.seen[stream]; ok && last.IsZero() {
		return
	}
	if o.seen == nil {
		o.seen = map[string]time.Time{}
	}
	if len(o.seen) >= maxOpenStreams {
		for s, t := range o.seen {
			if time.Since(t) >= o.every { // and the distrusted: a probe decides again
				delete(o.seen, s)
			}
		}
		if len(o.seen) >= maxOpenStreams {
			clear(o.seen)
		}
	}
	o.seen[stream] = at
}
