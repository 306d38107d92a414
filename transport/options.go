package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/heraldpush/herald/journal"
)

// Defaults and bounds of Options.
const (
	// DefaultTimeout (15 s) bounds one attempt, dial to last body byte:
	// enough for a slow receiver behind a cold TLS handshake; two fit in
	// the worker's 30 s lease.
	DefaultTimeout = 15 * time.Second
	// MaxTimeout (10 min) bounds Options.Timeout: a longer attempt would
	// outlive any sensible lease.
	MaxTimeout = 10 * time.Minute
	// DefaultMaxIdleConnsPerHost (16) is the worker's default MaxInFlight,
	// so that a fan-out to one big host keeps a warm connection a slot.
	DefaultMaxIdleConnsPerHost = 16
	// MaxIdleConnsPerHostLimit bounds Options.MaxIdleConnsPerHost.
	MaxIdleConnsPerHostLimit = 1024
)

// Options configure an HTTP transport. The zero value is the safe default:
// HTTPS only, public addresses only, any host, 15 s per attempt. Every fmt
// verb prints a summary (String), never what TLSConfig, Resolver or Logger
// point to.
type Options struct {
	// Timeout bounds one attempt: dial, TLS handshake, request, response
	// headers and body. Zero means DefaultTimeout; else 1 ms to MaxTimeout.
	Timeout time.Duration
	// AllowHTTP permits http:// URLs; by default they are refused
	// (Permanent) before any dial.
	AllowHTTP bool
	// AllowPrivateNetwork permits loopback, RFC 1918, carrier-grade NAT and
	// unique local addresses (CheckAddress), for tests, demos and receivers
	// inside one's own network. Every other refused range stays refused.
	AllowPrivateNetwork bool
	// AllowHosts, when not empty, lists the only hosts herald posts to
	// (HostPattern: "hooks.example.com", an IP address, "*.example.com").
	// The address rules still apply to them.
	AllowHosts []string
	// MaxIdleConnsPerHost bounds the keep-alive connections kept per host.
	// Zero means DefaultMaxIdleConnsPerHost; else 1 to
	// MaxIdleConnsPerHostLimit.
	MaxIdleConnsPerHost int
	// TLSConfig, if set, is cloned and used for HTTPS (a private CA's
	// RootCAs, client certificates); nil means the system roots. The
	// minimum version is TLS 1.2 either way.
	TLSConfig *tls.Config
	// Resolver looks host names up at dial time; nil means
	// net.DefaultResolver. The guard checks what it returns on connect.
	Resolver Resolver
	// Logger receives one debug line per attempt (host, status, verdict,
	// duration, reason; never a body, header, path or query). Nil means
	// slog.Default().
	Logger *slog.Logger
}

// validate returns o with its defaults filled in, and the parsed AllowHosts.
// Errors wrap journal.ErrInvalid, name the field, and are all reported.
func (o Options) validate() (Options, []HostPattern, error) {
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
	var allow []HostPattern
	for i, s := range o.AllowHosts {
		p, err := ParseHostPattern(s)
		if inv, ok := errors.AsType[*journal.InvalidError](err); ok {
			errs = append(errs, journal.Invalid(fmt.Sprintf("AllowHosts[%d]", i), "%s", inv.Reason))
		}
		allow = append(allow, p)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, allow, errors.Join(errs...)
}

// String summarises the options: the timeout, what the guard allows and the
// pool size; of TLSConfig, Resolver and Logger only whether they are set.
func (o Options) String() string {
	set := func(b bool) string {
		if b {
			return "set"
		}
		return "nil"
	}
	return fmt.Sprintf("transport.Options{Timeout: %v, AllowHTTP: %t, AllowPrivateNetwork: %t, AllowHosts: %d patterns, MaxIdleConnsPerHost: %d"+
		", TLSConfig: %s, Resolver: %s, Logger: %s}",
		o.Timeout, o.AllowHTTP, o.AllowPrivateNetwork, len(o.AllowHosts), o.MaxIdleConnsPerHost,
		set(o.TLSConfig != nil), set(o.Resolver != nil), set(o.Logger != nil))
}

// Format prints String for every verb (%v, %+v, %#v, %s, …), so that none
// walks into the TLS configuration.
func (o Options) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, o.String()) }
