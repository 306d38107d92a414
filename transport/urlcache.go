package transport

import (
	"net/url"
	"sync"
)

// urlCacheSize bounds the URLs a transport keeps parsed: a worker's
// registrations in flight many times over. Each entry is its URL's text
// (at most push.MaxURLBytes, 2 KiB) and the parsed url.URL, so the cache
// holds about 1 MiB for typical URLs of 100 bytes and at most about 16 MiB.
const urlCacheSize = 4096

// urlCache keeps the registration URLs the network guard accepted, parsed,
// so that a delivery does not parse and check its registration's URL again
// for every message (at fan-out 1,000 a worker sends to the same 1,000 URLs
// over and over). What checkURL decides depends only on the URL's text and
// the transport's Options, both fixed, so a kept answer stays right; only
// acceptances are kept (a refusal is rare and cheap next to a park). When
// full it is emptied rather than ranked: a worker with more distinct URLs
// than it holds parses as it did before. The URLs it returns are shared:
// callers copy before they change one (newRequest does).
type urlCache struct {
	mu sync.RWMutex
	m  map[string]*url.URL
}

// check returns raw parsed and accepted by g, from the cache when it can.
func (c *urlCache) check(g *guard, raw string) (*url.URL, error) {
	c.mu.RLock()
	u, ok := c.m[raw]
	c.mu.RUnlock()
	if ok {
		return u, nil
	}
	u, err := g.checkURL(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= urlCacheSize {
		c.m = make(map[string]*url.URL, min(urlCacheSize, 2*len(c.m)+16))
	}
	c.m[raw] = u
	c.mu.Unlock()
	return u, nil
}
