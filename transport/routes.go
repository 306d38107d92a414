package transport

import (
	"crypto/sha256"
	"crypto/tls"
	"net/http"
	"sync"
)

// MaxClients bounds the clients a transport keeps beside its own, one for
// each (proxy, client certificate) pair registrations use: each is its own
// connection pool. Past it the least recently made is dropped (its idle
// connections closed) and made again when next needed.
const MaxClients = 64

// clientKey names the client a registration's requests go through.
type clientKey struct {
	proxy string   // the registration's Endpoint.Proxy; "" for Options.Proxy or none
	cert  [32]byte // SHA-256 of its client certificate and key; zero for none
}

// route is what a registration's config asks of the transport.
type route struct {
	header http.Header // Endpoint.Headers, canonical
	key    clientKey
	cert   *tls.Certificate
}

// noRoute is the route of a config without endpoint settings.
var noRoute = &route{}

// routes caches the routes of registrations' configs (as urlCache does
// URLs, emptied when full) and the clients they share.
type routes struct {
	mu       sync.Mutex
	byConfig map[string]*route
	clients  map[clientKey]*http.Client
	order    []clientKey // of clients, oldest first
}

// get returns config's route, parsing it on a miss.
func (r *routes) get(config []byte) (*route, error) {
	r.mu.Lock()
	rt, ok := r.byConfig[string(config)]
	r.mu.Unlock()
	if ok {
		return rt, nil
	}
	e, err := EndpointOf(config)
	if err == nil {
		err = e.Check()
	}
	if err != nil {
		return nil, err
	}
	rt = noRoute
	if len(e.Headers) > 0 || e.ClientCert != "" || e.Proxy != "" {
		rt = &route{key: clientKey{proxy: e.Proxy}}
		if len(e.Headers) > 0 {
			rt.header = make(http.Header, len(e.Headers))
			for k, v := range e.Headers {
				rt.header[http.CanonicalHeaderKey(k)] = []string{v}
			}
		}
		if rt.cert, err = e.certificate(); err != nil {
			return nil, err
		}
		if rt.cert != nil {
			rt.key.cert = sha256.Sum256([]byte(e.ClientCert + "\x00" + e.ClientKey))
		}
	}
	r.mu.Lock()
	if r.byConfig == nil || len(r.byConfig) >= urlCacheSize {
		r.byConfig = make(map[string]*route, min(urlCacheSize, 2*len(r.byConfig)+16))
	}
	r.byConfig[string(config)] = rt
	r.mu.Unlock()
	return rt, nil
}

// clientOf returns the client rt's requests go through: the transport's
// own when rt asks for no proxy or certificate, else the one of its
// (proxy, certificate) pair, made on first use.
func (t *HTTP) clientOf(rt *route) *http.Client {
	if rt.key == (clientKey{}) {
		return t.client
	}
	r := t.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[rt.key]; ok {
		return c
	}
	if r.clients == nil {
		r.clients = make(map[clientKey]*http.Client)
	}
	if len(r.order) >= MaxClients {
		old := r.order[0]
		r.clients[old].CloseIdleConnections()
		delete(r.clients, old)
		r.order = r.order[1:]
	}
	c := t.newClient(rt.key, rt.cert)
	r.clients[rt.key] = c
	r.order = append(r.order, rt.key)
	return c
}

func (r *routes) closeIdle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.clients {
		c.CloseIdleConnections()
	}
}
