package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/heraldpush/herald"
	"github.com/heraldpush/herald/journal"
)

// Defaults and bounds, each with the reason it is what it is.
const (
	// DefaultTimeout (15 s) bounds one attempt from dial to the last byte
	// of the body read: long enough for a slow receiver behind a cold TLS
	// handshake, short enough that two fit in the worker's 30 s lease.
	DefaultTimeout = 15 * time.Second
	// MaxTimeout (10 min) bounds Options.Timeout: a longer attempt would
	// outlive any sensible lease and hold a worker slot hostage.
	MaxTimeout = 10 * time.Minute
	// DefaultMaxIdleConnsPerHost (16) matches the worker's default
	// MaxInFlight: when every registration in flight targets one big host
	// (one Mastodon instance, one webhook service), each keeps a warm
	// connection.
	DefaultMaxIdleConnsPerHost = 16
	// MaxIdleConnsPerHostLimit bounds Options.MaxIdleConnsPerHost.
	MaxIdleConnsPerHostLimit = 1024
	// MaxIdleConns (256) bounds idle connections over all hosts, so a
	// fan-out to thousands of receivers does not keep thousands of sockets.
	MaxIdleConns = 256
	// IdleConnTimeout (90 s) closes a pooled connection unused that long:
	// longer than a sweep interval, shorter than most servers' keep-alive.
	IdleConnTimeout = 90 * time.Second
	// MaxResponseHeaderBytes (64 KiB) bounds the response headers read.
	MaxResponseHeaderBytes = 64 << 10
	// MaxUserAgentBytes bounds Options.UserAgent.
	MaxUserAgentBytes = 256
)

// DefaultUserAgent is sent when Options.UserAgent is empty.
const DefaultUserAgent = "herald/" + herald.Version

// Options configure an HTTP transport. The zero value is the safe default:
// HTTPS only, public addresses only, any host, 15 s per attempt.
//
// Options hold no secrets, but their String (and every fmt verb, through
// Format) prints a summary only, never the TLS configuration, resolver or
// logger they point to.
type Options struct {
	// Timeout bounds one attempt: dial, TLS handshake, writing the request,
	// the response headers and reading the body. Zero means DefaultTimeout;
	// otherwise from 1 ms to MaxTimeout.
	Timeout time.Duration
	// AllowHTTP permits plain http:// URLs. Off by default: only https://
	// is sent, and an http:// URL is refused (Permanent) before any dial.
	AllowHTTP bool
	// AllowPrivateNetwork permits loopback (127.0.0.0/8, ::1), RFC 1918
	// private networks, carrier-grade NAT 100.64.0.0/10 and unique local
	// fc00::/7. Link-local addresses (the cloud metadata service
	// 169.254.169.254), multicast, unspecified and reserved ranges stay
	// refused whatever the options (see CheckAddress). For tests, demos and
	// receivers inside one's own network.
	AllowPrivateNetwork bool
	// AllowHosts, when not empty, lists the only hosts herald posts to:
	// exact names ("hooks.example.com"), IP addresses, or "*.example.com"
	// wildcards (see HostPattern). The address rules still apply to the
	// hosts it allows. Empty means every host whose addresses pass them.
	AllowHosts []string
	// MaxIdleConnsPerHost bounds the keep-alive connections kept per host.
	// Zero means DefaultMaxIdleConnsPerHost; otherwise 1 to
	// MaxIdleConnsPerHostLimit.
	MaxIdleConnsPerHost int
	// UserAgent is the User-Agent sent with every request. Empty means
	// DefaultUserAgent ("herald/<version>"). At most MaxUserAgentBytes of
	// visible ASCII and spaces.
	UserAgent string
	// TLSConfig, if set, is cloned and used for HTTPS (a private CA's
	// RootCAs, client certificates). Nil means the system roots. Either
	// way the minimum version is TLS 1.2.
	TLSConfig *tls.Config
	// Resolver looks up host names at dial time. Nil means
	// net.DefaultResolver. Whatever it returns is checked by the network
	// guard when the socket connects.
	Resolver Resolver
	// Logger receives one debug line per attempt (host, status, verdict,
	// duration, reason; never a body, a header, a path or a query). Nil
	// means slog.Default().
	Logger *slog.Logger
}

// validate checks o and returns it with its defaults filled in, and the
// parsed allowlist. Errors wrap journal.ErrInvalid, name the field, and are
// all reported at once.
func (o Options) validate() (Options, Allowlist, error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, journal.Invalid("Options."+field, format, args...))
	}
	switch {
	case o.Timeout == 0:
		o.Timeout = DefaultTimeout
	case o.Timeout < time.Millisecond || o.Timeout > MaxTimeout:
		bad("Timeout", "is %v: it must be from 1ms to %v (0 means %v)", o.Timeout, MaxTimeout, DefaultTimeout)
	}
	switch {
	case o.MaxIdleConnsPerHost == 0:
		o.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	case o.MaxIdleConnsPerHost < 1 || o.MaxIdleConnsPerHost > MaxIdleConnsPerHostLimit:
		bad("MaxIdleConnsPerHost", "is %d: it must be from 1 to %d (0 means %d)", o.MaxIdleConnsPerHost, MaxIdleConnsPerHostLimit, DefaultMaxIdleConnsPerHost)
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	} else if len(o.UserAgent) > MaxUserAgentBytes {
		bad("UserAgent", "is %d bytes: at most %d", len(o.UserAgent), MaxUserAgentBytes)
	} else if i := strings.IndexFunc(o.UserAgent, func(r rune) bool { return r < 0x20 || r > 0x7e }); i >= 0 {
		bad("UserAgent", "has a control or non-ASCII character at byte %d", i)
	}
	var allow Allowlist
	if len(o.AllowHosts) > 0 {
		var err error
		allow, err = ParseAllowlist(o.AllowHosts)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, allow, errors.Join(errs...)
}

// String summarises the options: the timeout, what the guard allows, the
// pool size and the user agent, never what TLSConfig, Resolver or Logger
// hold.
func (o Options) String() string {
	var b strings.Builder
	b.WriteString("transport.Options{")
	fmt.Fprintf(&b, "Timeout: %v, AllowHTTP: %t, AllowPrivateNetwork: %t, AllowHosts: %d patterns, MaxIdleConnsPerHost: %d",
		o.Timeout, o.AllowHTTP, o.AllowPrivateNetwork, len(o.AllowHosts), o.MaxIdleConnsPerHost)
	fmt.Fprintf(&b, ", UserAgent: %q, TLSConfig: %s, Resolver: %s, Logger: %s}",
		o.UserAgent, setOrNot(o.TLSConfig != nil), setOrNot(o.Resolver != nil), setOrNot(o.Logger != nil))
	return b.String()
}

// GoString is String, so %#v prints no more than %v.
func (o Options) GoString() string { return o.String() }

// Format prints String for every verb (%v, %+v, %#v, %s, %q, %x, …), so
// no verb walks into the pointed-to TLS configuration.
func (o Options) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, o.String()) }

func setOrNot(set bool) string {
	if set {
		return "set"
	}
	return "nil"
}
