package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrRefused is wrapped by every refusal of the network guard: a scheme, a
// host outside the allowlist, or an address in a range herald never connects
// to. A refused destination is a Permanent outcome.
var ErrRefused = errors.New("netguard: refused")

// RefusedError is the network guard's refusal of a destination. It wraps
// ErrRefused. Its message starts with "netguard: " and names the rule, e.g.
// "netguard: 10.1.2.3 is in 10.0.0.0/8 (RFC 1918 private)". It never holds a
// URL's path or query.
type RefusedError struct {
	Target string // what was refused: an address, "host <name>" or "scheme <s>"
	Rule   string // why, in words: "is in 10.0.0.0/8 (RFC 1918 private)"
	OptIn  string // the herald flag that lifts this refusal ("--allow-http"), "" when none does
}

func (e *RefusedError) Error() string { return "netguard: " + e.Target + " " + e.Rule }

// Unwrap returns ErrRefused.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// addrRule is one address range herald does not connect to. private ranges
// are opened by Options.AllowPrivateNetwork; the others never are.
type addrRule struct {
	prefix  netip.Prefix
	name    string
	private bool
}

// addrRules are checked in order; the first match names the refusal, so the
// narrow IPv6 prefixes come before ::/96 which contains them.
var addrRules = func() []addrRule {
	type r = struct {
		cidr, name string
		private    bool
	}
	raw := []r{
		// IPv4 (RFC 6890 special-purpose registry and friends).
		{"0.0.0.0/8", `"this network" (RFC 791; 0.0.0.0 reaches the local host)`, false},
		{"10.0.0.0/8", "RFC 1918 private", true},
		{"100.64.0.0/10", "shared address space, carrier-grade NAT (RFC 6598)", true},
		{"127.0.0.0/8", "loopback", true},
		{"169.254.0.0/16", "link-local, incl. cloud metadata 169.254.169.254 (RFC 3927)", false},
		{"172.16.0.0/12", "RFC 1918 private", true},
		{"192.0.0.0/24", "IETF protocol assignments (RFC 6890)", false},
		{"192.0.2.0/24", "documentation TEST-NET-1 (RFC 5737)", false},
		{"192.168.0.0/16", "RFC 1918 private", true},
		{"198.18.0.0/15", "benchmarking (RFC 2544)", false},
		{"198.51.100.0/24", "documentation TEST-NET-2 (RFC 5737)", false},
		{"203.0.113.0/24", "documentation TEST-NET-3 (RFC 5737)", false},
		{"224.0.0.0/4", "multicast (RFC 5771)", false},
		{"240.0.0.0/4", "reserved, incl. broadcast 255.255.255.255 (RFC 1112)", false},
		// IPv6. IPv4-mapped addresses (::ffff:0:0/96) are unmapped and
		// checked against the IPv4 rules before these.
		{"::/128", "unspecified", false},
		{"::1/128", "loopback", true},
		{"::/96", "IPv4-compatible (deprecated, RFC 4291)", false},
		{"::ffff:0:0:0/96", "IPv4-translated (RFC 2765)", false},
		{"64:ff9b::/96", "NAT64 (RFC 6052)", false},
		{"64:ff9b:1::/48", "local-use NAT64 (RFC 8215)", false},
		{"100::/64", "discard-only (RFC 6666)", false},
		{"2001::/32", "Teredo (RFC 4380)", false},
		{"2001:db8::/32", "documentation (RFC 3849)", false},
		{"2002::/16", "6to4 (RFC 3056)", false},
		{"fc00::/7", "unique local (RFC 4193)", true},
		{"fe80::/10", "link-local (RFC 4291)", false},
		{"fec0::/10", "site-local (deprecated, RFC 3879)", false},
		{"ff00::/8", "multicast (RFC 4291)", false},
	}
	rules := make([]addrRule, len(raw))
	for i, x := range raw {
		rules[i] = addrRule{prefix: netip.MustParsePrefix(x.cidr), name: x.name, private: x.private}
	}
	return rules
}()

// CheckAddress reports whether herald may connect to addr. It returns nil
// for a global unicast address, and a *RefusedError (wrapping ErrRefused)
// naming the range otherwise:
//
//   - always refused: unspecified (0.0.0.0, ::) and 0.0.0.0/8, link-local
//     (169.254.0.0/16 with the cloud metadata service 169.254.169.254,
//     fe80::/10), multicast, reserved 240.0.0.0/4 and broadcast,
//     192.0.0.0/24, benchmarking 198.18.0.0/15, the documentation ranges,
//     NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo, IPv4-compatible and
//     site-local IPv6, and anything else that is not global unicast;
//   - refused unless allowPrivateNetwork: loopback (127.0.0.0/8, ::1), RFC
//     1918 (10/8, 172.16/12, 192.168/16), carrier-grade NAT 100.64.0.0/10
//     and unique local fc00::/7.
//
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are judged as the IPv4
// address they carry; a zone (fe80::1%eth0) is ignored. An invalid addr is
// refused.
func CheckAddress(addr netip.Addr, allowPrivateNetwork bool) error {
	if !addr.IsValid() {
		return &RefusedError{Target: "address", Rule: "is not a valid IP address"}
	}
	addr = addr.WithZone("")
	check := addr
	if addr.Is4In6() {
		check = addr.Unmap()
	}
	// The refusal's words are built only for a refusal: an accepted address
	// (every delivery to an IP literal, every connection) costs no string.
	target := func() string {
		if addr.Is4In6() {
			return fmt.Sprintf("%s (IPv4-mapped %s)", addr, check)
		}
		return addr.String()
	}
	for _, r := range addrRules {
		if !r.prefix.Contains(check) {
			continue
		}
		if r.private && allowPrivateNetwork {
			return nil
		}
		rule := fmt.Sprintf("is in %s (%s)", r.prefix, r.name)
		optIn := ""
		if r.private {
			rule += "; herald run/sweep --allow-private-network (Options.AllowPrivateNetwork) opts in"
			optIn = "--allow-private-network"
		} else {
			rule += "; no option lifts it: herald never connects there"
		}
		return &RefusedError{Target: target(), Rule: rule, OptIn: optIn}
	}
	if !check.IsGlobalUnicast() {
		return &RefusedError{Target: target(), Rule: "is not a global unicast address"}
	}
	return nil
}

// guard applies the network rules: to a URL before any request is built,
// and to every address at connect time (the real guard, which also covers
// DNS rebinding: the address checked is the one the socket connects to).
type guard struct {
	allowHTTP    bool
	allowPrivate bool
	allowlist    Allowlist // nil: every host (that passes the address rules)
	resolver     Resolver
	dialer       net.Dialer
}

// Resolver looks up the IP addresses of a host name; network is "ip",
// "ip4" or "ip6". *net.Resolver implements it. The addresses it returns are
// checked at connect time like any other.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ResolverFunc adapts a function to Resolver (for tests and custom DNS).
type ResolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// LookupNetIP calls f.
func (f ResolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

// checkURL parses raw and applies the rules that need no connection: the
// scheme, userinfo, the host allowlist, and IP literals (including the
// decimal, octal and hex IPv4 forms some resolvers accept, which are refused
// outright). Errors are *RefusedError, or a plain error for an unparseable
// URL; neither repeats the URL's path or query.
func (g *guard) checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("url: cannot be parsed")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !g.allowHTTP {
			return nil, &RefusedError{Target: "scheme http", Rule: "is not allowed: https only; herald run/sweep --allow-http (Options.AllowHTTP) opts in", OptIn: "--allow-http"}
		}
	default:
		return nil, &RefusedError{Target: fmt.Sprintf("scheme %q", u.Scheme), Rule: "is not allowed: https only"}
	}
	if u.User != nil {
		return nil, &RefusedError{Target: "url", Rule: "has userinfo (user:password@); credentials belong in the projection config"}
	}
	host := normalizeHost(u.Hostname())
	if host == "" {
		return nil, &RefusedError{Target: "url", Rule: "has no host"}
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if err := CheckAddress(addr, g.allowPrivate); err != nil {
			return nil, err
		}
	} else if endsInNumber(host) {
		return nil, &RefusedError{Target: "host " + host, Rule: "looks like an IPv4 address in a non-canonical (decimal, octal, hex or short) form; write it as a.b.c.d"}
	}
	if g.allowlist != nil && !g.allowlist.Match(host) {
		return nil, &RefusedError{Target: "host " + host, Rule: "is not in the allowlist (herald run/sweep --allow-host, Options.AllowHosts)", OptIn: "--allow-host"}
	}
	return u, nil
}

// URLRefusals lists every rule of the network guard that raw breaks before
// any connection is made, with the default Options (https only, public
// addresses only, no allowlist): the scheme, userinfo, the host, an IP
// literal's range, and a localhost name (RFC 6761: it is loopback). Each is
// a *RefusedError; one that an opt-in lifts (OptIn) is followed by what
// would still be refused with it. What a DNS name resolves to is judged
// only at connect time. herald register uses it to warn before a sweep
// parks the registration.
func URLRefusals(raw string) []error { return guard{}.refusals(raw) }

// refusals lists every rule of g (a copy: opt-ins are lifted on it) that
// raw breaks before any connection is made, as URLRefusals does.
func (g guard) refusals(raw string) []error {
	var out []error
	for range 3 {
		u, err := g.checkURL(raw)
		if err == nil && u != nil {
			if h := strings.TrimSuffix(strings.ToLower(u.Hostname()), "."); h == "localhost" || strings.HasSuffix(h, ".localhost") {
				var re *RefusedError
				if err = CheckAddress(netip.AddrFrom4([4]byte{127, 0, 0, 1}), g.allowPrivate); errors.As(err, &re) {
					re.Target = "host " + h + " (127.0.0.1)"
				}
			}
		}
		if err == nil {
			break
		}
		out = append(out, err)
		var re *RefusedError
		if !errors.As(err, &re) {
			break
		}
		switch re.OptIn {
		case "--allow-http":
			g.allowHTTP = true
		case "--allow-private-network":
			g.allowPrivate = true
		default:
			return out
		}
	}
	return out
}

// endsInNumber reports whether host's last label is a number (decimal, or
// hex with 0x): such a host is an IPv4 address to URL parsers (WHATWG URL,
// "ends in a number") and to inet_aton-style resolvers, never a DNS name.
func endsInNumber(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		for i := 0; i < len(last); i++ {
			c := last[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
	}
	return true
}

// normalizeHost lowercases host and strips one trailing dot.
func normalizeHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// control is the dialer's Control hook: it runs after the socket is created
// and before it connects, with the address it is about to connect to.
func (g *guard) control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp4", "tcp6":
	default:
		return &RefusedError{Target: "network " + network, Rule: "is not allowed: tcp only"}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Target: "address", Rule: "cannot be parsed: " + err.Error()}
	}
	return CheckAddress(ap.Addr(), g.allowPrivate)
}

// dialContext resolves addr's host with the guard's resolver and connects
// to its addresses in order, each through the dialer whose Control refuses
// forbidden addresses. Refused addresses are skipped; if every address was
// refused the refusal is returned (a Permanent outcome), otherwise the first
// other failure (a Transient one).
func (g *guard) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := net.LookupPort(network, portStr)
	if err != nil {
		return nil, err
	}
	family := "ip"
	switch network {
	case "tcp4":
		family = "ip4"
	case "tcp6":
		family = "ip6"
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = g.resolver.LookupNetIP(ctx, family, host)
		if err != nil {
			return nil, &resolveError{host: host, err: err}
		}
		if len(addrs) == 0 {
			return nil, &resolveError{host: host, err: errors.New("no addresses")}
		}
	}
	var refused, failed error
	for i, a := range addrs {
		c, err := g.dialOne(ctx, network, netip.AddrPortFrom(a.Unmap(), uint16(port)), len(addrs)-i)
		if err == nil {
			return c, nil
		}
		if errors.Is(err, ErrRefused) {
			if refused == nil {
				refused = err
			}
			continue
		}
		if failed == nil {
			failed = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if failed != nil {
		return nil, failed
	}
	return nil, refused
}

// minDialShare is the least time one of several addresses gets before the
// next is tried (as net.Dialer does), unless the deadline leaves less.
const minDialShare = 2 * time.Second

// dialOne connects to one address through the guarded dialer. With left
// addresses still to try, it gets an equal share of the time remaining
// before ctx's deadline, so an address that swallows packets cannot eat the
// whole attempt.
func (g *guard) dialOne(ctx context.Context, network string, ap netip.AddrPort, left int) (net.Conn, error) {
	if deadline, ok := ctx.Deadline(); ok && left > 1 {
		remaining := time.Until(deadline)
		share := max(remaining/time.Duration(left), min(minDialShare, remaining))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, share)
		defer cancel()
	}
	return g.dialer.DialContext(ctx, network, ap.String())
}

// resolveError is a failed name lookup: a Transient outcome ("dns: ...").
type resolveError struct {
	host string
	err  error
}

func (e *resolveError) Error() string {
	var dnsErr *net.DNSError
	if errors.As(e.err, &dnsErr) {
		return "dns: " + dnsErr.Error()
	}
	return "dns: lookup " + e.host + ": " + e.err.Error()
}

func (e *resolveError) Unwrap() error { return e.err }
