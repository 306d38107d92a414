// Package throttle slows failed authentication per client: each client
// address (an IPv4 address, an IPv6 /64) has Burst failures at once, then
// one every Every; past that its requests are refused, whatever token they
// carry, until it may try again. Failures and the start of a throttle are
// logged. It knows clients, not tokens, so that tokens with roles change
// nothing here.
package throttle

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Burst and Every: an operator who mistypes the token has ten tries at
// once, then one every 6 s (10 a minute); a guesser, at that rate from each
// address, needs ~10^37 years for a 128-bit token, and its log lines stay
// at 10 a minute per address.
const (
	Burst = 10
	Every = 6 * time.Second
)

// maxClients bounds the clients remembered (~100 bytes each); when full,
// those whose allowance is whole again are forgotten, and if none is, new
// clients share one allowance.
const maxClients = 4096

// Throttle counts failed authentications per client. Its methods are safe
// for concurrent use. Build it with New.
type Throttle struct {
	now func() time.Time
	log *slog.Logger

	mu      sync.Mutex
	clients map[netip.Prefix]*allowance
	crowd   allowance // shared by the clients past maxClients
}

type allowance struct {
	tries float64   // tries left, at most Burst
	at    time.Time // when tries was counted
	told  bool      // the throttle was logged since tries last reached 1
}

// New returns a Throttle on clock now (time.Now when nil) that logs to log.
func New(now func() time.Time, log *slog.Logger) *Throttle {
	if now == nil {
		now = time.Now
	}
	return &Throttle{now: now, log: log, clients: map[netip.Prefix]*allowance{}, crowd: allowance{tries: Burst, at: now()}}
}

// get returns client's allowance, refilled to now; mu is held.
func (t *Throttle) get(client netip.Prefix, now time.Time) *allowance {
	a := t.clients[client]
	if a == nil {
		if len(t.clients) >= maxClients {
			for c, o := range t.clients {
				if o.refill(now) >= Burst {
					delete(t.clients, c)
				}
			}
			if len(t.clients) >= maxClients {
				t.crowd.refill(now)
				return &t.crowd
			}
		}
		a = &allowance{tries: Burst, at: now}
		t.clients[client] = a
	}
	a.refill(now)
	return a
}

func (a *allowance) refill(now time.Time) float64 {
	if d := now.Sub(a.at); d > 0 {
		a.tries = min(Burst, a.tries+float64(d)/float64(Every))
		a.at = now
	}
	return a.tries
}

// Wait is how long client must wait before it may authenticate: 0 when it
// may now. The first refusal of a throttle is logged, naming what (the
// API, the page).
func (t *Throttle) Wait(client netip.Prefix, what string) time.Duration {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.get(client, now)
	if a.tries >= 1 {
		a.told = false
		return 0
	}
	wait := time.Duration((1-a.tries)*float64(Every)).Round(time.Second) + time.Second
	if !a.told {
		a.told = true
		t.log.Warn("herald: too many failed authentications; refusing this client's requests for a while",
			"client", client.String(), "to", what, "retry_after", wait, "allowed", "10 failures, then one every 6 s")
	}
	return wait
}

// Failed counts a failed authentication by client and logs it.
func (t *Throttle) Failed(client netip.Prefix, what string) {
	now := t.now()
	t.mu.Lock()
	a := t.get(client, now)
	a.tries = max(0, a.tries-1)
	left := int(a.tries)
	t.mu.Unlock()
	t.log.Warn("herald: authentication failed", "client", client.String(), "to", what, "tries_left", left)
}

// Client is the client r counts against: the address of the TCP peer, or,
// when behindProxy, the last address of X-Forwarded-For (the one the proxy
// in front added; the ones before it are the client's word), as an IPv4
// address or an IPv6 /64.
func Client(r *http.Request, behindProxy bool) netip.Prefix {
	if behindProxy {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			last := xff[len(xff)-1]
			last = strings.TrimSpace(last[strings.LastIndexByte(last, ',')+1:])
			if a, err := netip.ParseAddr(last); err == nil {
				return Of(a)
			}
		}
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return Of(ap.Addr())
	}
	return netip.Prefix{}
}

// OfAddr is Of the IP address of a (a *net.TCPAddr), or the zero Prefix.
func OfAddr(a net.Addr) netip.Prefix {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Prefix{}
	}
	return Of(ap.Addr())
}

// Of is the client a is: itself for IPv4, its /64 for IPv6 (what one
// subscriber is usually given).
func Of(a netip.Addr) netip.Prefix {
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}
