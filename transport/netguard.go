package transport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heraldpush/herald/journal"
)

// ErrRefused is wrapped by every refusal of the network guard. A refused
// destination is a Permanent outcome.
var ErrRefused = errors.New("netguard: refused")

// RefusedError is the network guard's refusal of a destination; it wraps
// ErrRefused. Its message is "netguard: " Target Rule, e.g. "netguard:
// 10.1.2.3 is in 10.0.0.0/8 (RFC 1918 private); …", and never holds a URL's
// path or query.
type RefusedError struct {
	Target string // what was refused: an address, "host <name>" or "scheme <s>"
	Rule   string // why, in words
	OptIn  string // the herald flag that lifts this refusal ("--allow-http"), "" when none does
}

func (e *RefusedError) Error() string { return "netguard: " + e.Target + " " + e.Rule }

func (e *RefusedError) Unwrap() error { return ErrRefused }

// addrRule is one address range herald does not connect to; private ones
// are opened by Options.AllowPrivateNetwork. source is where the range is
// defined: an RFC, and for most the IANA IPv4 or IPv6 Special-Purpose
// Address Registry (iana-ipv4-special-registry, iana-ipv6-special-registry),
// or the cloud's documentation for a metadata service.
type addrRule struct {
	prefix  netip.Prefix
	name    string
	private bool
	source  string
}

const (
	ianaV4 = "IANA IPv4 Special-Purpose Address Registry"
	ianaV6 = "IANA IPv6 Special-Purpose Address Registry"
)

// addrRules are checked in order and the first match names the refusal, so
// the cloud metadata addresses come first (no option opens them, though
// some sit in ranges AllowPrivateNetwork opens) and the narrow IPv6
// prefixes come before ::/96, which contains them. Every range of both IANA
// registries is here, the globally reachable anycast services included
// (AS112, AMT, PCP, TURN): none is a receiver of webhooks.
var addrRules = []addrRule{
	// Cloud instance metadata and host services: they hand out credentials.
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata: Alibaba Cloud ECS", false, "Alibaba Cloud ECS instance metadata documentation"},
	{netip.MustParsePrefix("168.63.129.16/32"), "cloud metadata: Azure WireServer and host services", false, "Azure documentation, \"What is IP address 168.63.129.16\""},
	{netip.MustParsePrefix("fd00:ec2::/64"), "cloud metadata: AWS EC2 IMDS fd00:ec2::254, DNS ::253, time ::123, EKS Pod Identity ::23", false, "AWS EC2 instance metadata (IPv6) documentation"},
	{netip.MustParsePrefix("fd20:ce::254/128"), "cloud metadata: Google Compute Engine (IPv6)", false, "Google Compute Engine metadata server documentation"},
	{netip.MustParsePrefix("fd00:42::42/128"), "cloud metadata: Scaleway Instances (IPv6; IPv4 169.254.42.42 is link-local)", false, "Scaleway Instances metadata API documentation"},

	// IPv4.
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network" (RFC 791; 0.0.0.0 reaches the local host)`, false, "RFC 791, RFC 1122; " + ianaV4},
	{netip.MustParsePrefix("10.0.0.0/8"), "RFC 1918 private", true, "RFC 1918; " + ianaV4},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space, carrier-grade NAT (RFC 6598)", true, "RFC 6598; " + ianaV4},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback", true, "RFC 1122; " + ianaV4},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local, incl. cloud metadata 169.254.169.254 (RFC 3927)", false, "RFC 3927; " + ianaV4},
	{netip.MustParsePrefix("172.16.0.0/12"), "RFC 1918 private", true, "RFC 1918; " + ianaV4},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (RFC 6890)", false, "RFC 6890 (DS-Lite RFC 7335, PCP RFC 7723, TURN RFC 8155, NAT64 discovery RFC 8880); " + ianaV4},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation TEST-NET-1 (RFC 5737)", false, "RFC 5737; " + ianaV4},
	{netip.MustParsePrefix("192.31.196.0/24"), "AS112-v4 DNS sink (RFC 7535)", false, "RFC 7535; " + ianaV4},
	{netip.MustParsePrefix("192.52.193.0/24"), "AMT anycast (RFC 7450)", false, "RFC 7450; " + ianaV4},
	{netip.MustParsePrefix("192.88.99.0/24"), "deprecated 6to4 relay anycast (RFC 7526)", false, "RFC 7526; " + ianaV4},
	{netip.MustParsePrefix("192.168.0.0/16"), "RFC 1918 private", true, "RFC 1918; " + ianaV4},
	{netip.MustParsePrefix("192.175.48.0/24"), "AS112 direct delegation DNS sink (RFC 7534)", false, "RFC 7534; " + ianaV4},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (RFC 2544)", false, "RFC 2544; " + ianaV4},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation TEST-NET-2 (RFC 5737)", false, "RFC 5737; " + ianaV4},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation TEST-NET-3 (RFC 5737)", false, "RFC 5737; " + ianaV4},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (RFC 5771)", false, "RFC 5771; IANA IPv4 Multicast Address Space Registry"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved, incl. broadcast 255.255.255.255 (RFC 1112)", false, "RFC 1112, RFC 8190 (limited broadcast); " + ianaV4},
	// IPv6; an IPv4-mapped address is unmapped and judged by the rules above.
	{netip.MustParsePrefix("::/128"), "unspecified", false, "RFC 4291; " + ianaV6},
	{netip.MustParsePrefix("::1/128"), "loopback", true, "RFC 4291; " + ianaV6},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated, RFC 4291)", false, "RFC 4291 section 2.5.5.1"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated (RFC 2765)", false, "RFC 2765"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64 (RFC 6052)", false, "RFC 6052; " + ianaV6},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 (RFC 8215)", false, "RFC 8215; " + ianaV6},
	{netip.MustParsePrefix("100::/64"), "discard-only (RFC 6666)", false, "RFC 6666; " + ianaV6},
	{netip.MustParsePrefix("100:0:0:1::/64"), "dummy prefix (RFC 9780)", false, "RFC 9780; " + ianaV6},
	{netip.MustParsePrefix("2001::/32"), "Teredo (RFC 4380)", false, "RFC 4380, RFC 8190; " + ianaV6},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments: benchmarking, AMT, AS112, ORCHID, drone DETs, anycast services (RFC 2928)", false,
		"RFC 2928 (2001:2::/48 RFC 5180, 2001:3::/32 RFC 7450, 2001:4:112::/48 RFC 7535, 2001:10::/28 RFC 4843, 2001:20::/28 RFC 7343, 2001:30::/28 RFC 9374); " + ianaV6},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (RFC 3849)", false, "RFC 3849; " + ianaV6},
	{netip.MustParsePrefix("2002::/16"), "6to4 (RFC 3056)", false, "RFC 3056; " + ianaV6},
	{netip.MustParsePrefix("2620:4f:8000::/48"), "AS112 direct delegation DNS sink (RFC 7534)", false, "RFC 7534; " + ianaV6},
	{netip.MustParsePrefix("3fff::/20"), "documentation (RFC 9637)", false, "RFC 9637; " + ianaV6},
	{netip.MustParsePrefix("5f00::/16"), "segment routing SIDs (RFC 9602)", false, "RFC 9602; " + ianaV6},
	{netip.MustParsePrefix("fc00::/7"), "unique local (RFC 4193)", true, "RFC 4193, RFC 8190; " + ianaV6},
	{netip.MustParsePrefix("fe80::/10"), "link-local (RFC 4291)", false, "RFC 4291; " + ianaV6},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated, RFC 3879)", false, "RFC 3879"},
	{netip.MustParsePrefix("ff00::/8"), "multicast (RFC 4291)", false, "RFC 4291; IANA IPv6 Multicast Address Space Registry"},
}

// CheckAddress reports whether herald may connect to addr: nil for a global
// unicast address, else a *RefusedError naming the range. Loopback, RFC
// 1918, carrier-grade NAT and unique local ranges are allowed with
// allowPrivateNetwork; cloud metadata addresses (fd00:ec2::254 and
// 100.100.100.200 among them) and the other ranges of the IANA
// special-purpose registries (link-local with 169.254.169.254, multicast,
// NAT64, 6to4, …) never are.
// An IPv4-mapped address is judged as the IPv4 address it carries; a zone
// is ignored; an invalid addr is refused.
func CheckAddress(addr netip.Addr, allowPrivateNetwork bool) error {
	if !addr.IsValid() {
		return &RefusedError{Target: "address", Rule: "is not a valid IP address"}
	}
	addr = addr.WithZone("")
	check := addr.Unmap()
	target := func() string { // built only for a refusal: an accepted address costs no string
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
		if !r.private {
			return &RefusedError{Target: target(), Rule: rule + "; no option lifts it: herald never connects there"}
		}
		return &RefusedError{Target: target(), Rule: rule + "; herald run/sweep --allow-private-network (Options.AllowPrivateNetwork) opts in",
			OptIn: "--allow-private-network"}
	}
	if !check.IsGlobalUnicast() {
		return &RefusedError{Target: target(), Rule: "is not a global unicast address"}
	}
	return nil
}

// guard applies the network rules (package doc, "Network guard").
type guard struct {
	allowHTTP    bool
	allowPrivate bool
	allowlist    []HostPattern // nil: every host
	resolver     Resolver
	dialer       net.Dialer
}

// Resolver looks up the IP addresses of a host name; network is "ip",
// "ip4" or "ip6". *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// checkURL parses raw and applies the rules that need no connection. Errors
// are *RefusedError, or a plain one for an unparseable URL; neither repeats
// the URL's path or query.
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
	if g.allowlist != nil && !slices.ContainsFunc(g.allowlist, func(p HostPattern) bool { return p.Match(host) }) {
		return nil, &RefusedError{Target: "host " + host, Rule: "is not in the allowlist (herald run/sweep --allow-host, Options.AllowHosts)", OptIn: "--allow-host"}
	}
	return u, nil
}

// urlCacheSize bounds the URLs a transport keeps parsed: at most about
// 16 MiB of URLs of store.MaxURLBytes (2 KiB), 1 MiB of typical ones.
const urlCacheSize = 4096

// urlCache keeps the URLs checkURL accepted, parsed, so that a worker
// sending to the same URLs over and over checks each once; when full it is
// emptied. Its URLs are shared: callers copy one before changing it.
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

// URLRefusals lists every rule of the network guard, with the zero Options,
// that raw breaks before any connection is made, a localhost name (RFC
// 6761) included. Each is a *RefusedError; one an opt-in lifts (OptIn) is
// followed by what would still be refused with it. What a DNS name
// resolves to is judged only at connect time.
func URLRefusals(raw string) []error { return guard{}.refusals(raw) }

// refusals is URLRefusals under g's rules; g is a copy, whose opt-ins are
// lifted one by one.
func (g guard) refusals(raw string) []error {
	var out []error
	for range 3 { // each pass lifts one opt-in, or ends
		u, err := g.checkURL(raw)
		var h string
		if err == nil {
			h = normalizeHost(u.Hostname())
		}
		if h == "localhost" || strings.HasSuffix(h, ".localhost") {
			if err = CheckAddress(netip.AddrFrom4([4]byte{127, 0, 0, 1}), g.allowPrivate); err != nil {
				err.(*RefusedError).Target = "host " + h + " (127.0.0.1)"
			}
		}
		if err == nil {
			return out
		}
		out = append(out, err)
		switch re, _ := errors.AsType[*RefusedError](err); {
		case re != nil && re.OptIn == "--allow-http":
			g.allowHTTP = true
		case re != nil && re.OptIn == "--allow-private-network":
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
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.TrimLeft(hex, "0123456789abcdef") == ""
	}
	return last != "" && strings.TrimLeft(last, "0123456789") == ""
}

func normalizeHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// control is the dialer's Control hook, run with the address a new socket
// is about to connect to.
func (g *guard) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return &RefusedError{Target: "network " + network, Rule: "is not allowed: tcp only"}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Target: "address", Rule: "cannot be parsed: " + err.Error()}
	}
	return CheckAddress(ap.Addr(), g.allowPrivate)
}

// dialContext connects to the addresses of addr's host in order, skipping
// refused ones. It returns the first failure that is not a refusal
// (Transient), or the first refusal when every address was refused.
func (g *guard) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return g.dial(ctx, network, addr, func(ctx context.Context, network string, ap netip.AddrPort) (net.Conn, error) {
		return g.dialer.DialContext(ctx, network, ap.String()) // the dialer's Control checks the address
	})
}

// dial resolves addr's host and calls connect with its addresses in order,
// as dialContext describes.
func (g *guard) dial(ctx context.Context, network, addr string, connect func(context.Context, string, netip.AddrPort) (net.Conn, error)) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := net.LookupPort(network, portStr)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		family := "ip" + strings.TrimPrefix(network, "tcp") // http.Transport dials tcp, tcp4 or tcp6
		if addrs, err = g.resolver.LookupNetIP(ctx, family, host); err == nil && len(addrs) == 0 {
			err = errors.New("no addresses")
		}
		if err != nil {
			return nil, &resolveError{host: host, err: err}
		}
	}
	var refused, failed error
	for i, a := range addrs {
		// With addresses left to try, one gets its share of the time left, at
		// least 2 s as net.Dialer gives, so that one swallowing packets cannot
		// eat the whole attempt.
		dialCtx, cancel := ctx, context.CancelFunc(func() {})
		if deadline, ok := ctx.Deadline(); ok && i < len(addrs)-1 {
			remaining := time.Until(deadline)
			dialCtx, cancel = context.WithTimeout(ctx, max(remaining/time.Duration(len(addrs)-i), min(2*time.Second, remaining)))
		}
		c, err := connect(dialCtx, network, netip.AddrPortFrom(a.Unmap(), uint16(port)))
		cancel()
		switch {
		case err == nil:
			return c, nil
		case errors.Is(err, ErrRefused):
			refused = cmp.Or(refused, err)
		case ctx.Err() != nil:
			return nil, cmp.Or(failed, err)
		default:
			failed = cmp.Or(failed, err)
		}
	}
	return nil, cmp.Or(failed, refused)
}

// resolveError is a failed name lookup: a Transient outcome ("dns: …").
type resolveError struct {
	host string
	err  error
}

func (e *resolveError) Error() string {
	if dnsErr, ok := errors.AsType[*net.DNSError](e.err); ok {
		return "dns: " + dnsErr.Error()
	}
	return "dns: lookup " + e.host + ": " + e.err.Error()
}

func (e *resolveError) Unwrap() error { return e.err }

// HostPattern is one entry of a host allowlist: an exact host name
// ("hooks.example.com"), an IP address ("203.0.113.7", "2001:db8::1"), or
// "*.example.com", which matches every name below example.com at any depth
// but not example.com itself. Names are ASCII (xn-- for internationalized
// ones), labels of letters, digits, '-' and '_'; matching ignores case and
// one trailing dot. The zero HostPattern matches nothing.
type HostPattern struct {
	name     string     // lowercase, no trailing dot; for a wildcard, the suffix without "*."
	wildcard bool       // "*.name"
	addr     netip.Addr // valid for an IP address pattern
}

// ParseHostPattern parses one allowlist entry. Errors wrap journal.ErrInvalid
// and say what is wrong (a URL, a port, a bare "*", a label over 63 bytes, …).
func ParseHostPattern(s string) (HostPattern, error) {
	bad := func(format string, args ...any) (HostPattern, error) {
		return HostPattern{}, journal.Invalid("host pattern", "%q "+format, append([]any{s}, args...)...)
	}
	switch {
	case s == "":
		return HostPattern{}, journal.Invalid("host pattern", "is empty")
	case s == "*" || s == "*.":
		return bad("would allow every host; leave the allowlist empty to allow all public hosts")
	case strings.Contains(s, "://"):
		return bad("is a URL; give the host name only (hooks.example.com)")
	case strings.ContainsAny(s, "/?#@"):
		return bad("has a path, query or userinfo; give the host name only")
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] >= 0x80:
			return bad("is not ASCII; write internationalized names in their xn-- (punycode) form")
		case s[i] <= 0x20 || s[i] == 0x7f:
			return bad("has a space or control character at byte %d", i)
		}
	}
	lower := strings.ToLower(s)
	if ip := strings.TrimSuffix(strings.TrimPrefix(lower, "["), "]"); strings.Contains(ip, ":") {
		addr, err := netip.ParseAddr(ip)
		if err != nil || addr.Zone() != "" {
			return bad("has a port or is not an IP address; ports are not matched, give the host only")
		}
		return HostPattern{addr: addr}, nil
	}
	if addr, err := netip.ParseAddr(lower); err == nil {
		return HostPattern{addr: addr}, nil
	}
	name, wildcard := strings.CutPrefix(lower, "*.")
	name = strings.TrimSuffix(name, ".")
	switch {
	case strings.Contains(name, "*"):
		return bad("has a wildcard that is not the whole leftmost label; only *.example.com is supported")
	case name == "":
		return bad("has no name after the wildcard")
	case len(name) > 253:
		return bad("is longer than 253 bytes")
	case endsInNumber(name):
		return bad("ends in a number, so it is an IP address to URL parsers, but not a canonical one (a.b.c.d)")
	}
	for _, label := range strings.Split(name, ".") {
		switch rest := strings.TrimLeft(label, "abcdefghijklmnopqrstuvwxyz0123456789-_"); {
		case label == "":
			return bad("has an empty label")
		case len(label) > 63:
			return bad("has a label longer than 63 bytes")
		case label[0] == '-' || label[len(label)-1] == '-':
			return bad("has a label that starts or ends with '-'")
		case rest != "":
			return bad("has %q, which is not a letter, digit, '-' or '_'", rest[0])
		}
	}
	return HostPattern{name: name, wildcard: wildcard}, nil
}

// Match reports whether host (a URL's host name, without port or brackets)
// matches the pattern.
func (p HostPattern) Match(host string) bool {
	if p.addr.IsValid() {
		a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
		return err == nil && a.WithZone("") == p.addr
	}
	if p.name == "" {
		return false
	}
	host = normalizeHost(host)
	if !p.wildcard {
		return host == p.name
	}
	return len(host) > len(p.name)+1 && strings.HasSuffix(host, p.name) && host[len(host)-len(p.name)-1] == '.'
}

// String returns the pattern in its canonical form.
func (p HostPattern) String() string {
	switch {
	case p.addr.IsValid():
		return p.addr.String()
	case p.wildcard:
		return "*." + p.name
	}
	return p.name
}
