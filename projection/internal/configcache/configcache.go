// Package configcache is the part every projection shares: its namespace,
// Terminal (rec.Final), ValidateConfig, and the registrations' configs
// parsed once, so that a sweep does not parse one (a PEM key, say) for
// every record. Entries are keyed by the config bytes (registrations with
// one config share an entry); at most size are kept, the oldest going
// first; errors are not kept.
package configcache

import (
	"sync"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/configjson"
	"github.com/heraldpush/herald/push"
)

// Projection is the shared part of a projection whose parsed configs are
// Ts. A projection embeds it through an unexported alias, getting
// Namespace, Terminal and ValidateConfig and nothing else. It is safe for
// concurrent use; T must be safe to read concurrently.
type Projection[T any] struct {
	namespace string
	parse     func(push.Config) (T, error)

	mu    sync.Mutex
	max   int
	items map[string]T
	order []string // insertion order, oldest first
}

// New returns the shared part of namespace's projection, keeping at most
// size parsed configs (at least 1). check validates a config decoded by
// configjson.Decode and returns its parsed form.
func New[C, T any](namespace string, size int, check func(C) (T, error)) *Projection[T] {
	size = max(1, size)
	return &Projection[T]{namespace: namespace, max: size, items: make(map[string]T, size),
		parse: func(raw push.Config) (T, error) {
			var c C
			if err := configjson.Decode(raw, &c); err != nil {
				return *new(T), err
			}
			return check(c)
		}}
}

// Namespace returns the namespace the projection serves.
func (p *Projection[T]) Namespace() string { return p.namespace }

// Terminal reports rec.Final.
func (p *Projection[T]) Terminal(rec journal.Record) bool { return rec.Final }

// ValidateConfig checks reg.Config as the package's ParseConfig does, with
// the same errors.
func (p *Projection[T]) ValidateConfig(reg push.Registration) error {
	_, err := Get(p, reg.Config)
	return err
}

// Get returns the parsed form of raw, parsing it on a miss (outside the
// lock, so two goroutines may both parse it). It is a function so that it
// is not promoted into the projection's API.
func Get[T any](p *Projection[T], raw push.Config) (T, error) {
	p.mu.Lock()
	v, ok := p.items[string(raw)] // no copy: the conversion is only a lookup
	p.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := p.parse(raw)
	if err != nil {
		return v, err
	}
	key := string(raw) // a copy: the caller may reuse raw
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.items[key]; !ok {
		if len(p.order) >= p.max {
			delete(p.items, p.order[0])
			p.order = p.order[1:]
		}
		p.items[key] = v
		p.order = append(p.order, key)
	}
	return v, nil
}
